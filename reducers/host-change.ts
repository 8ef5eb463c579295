/**
 * What a member set an edge received (DNS answers, an EDS assignment) changes in a snapshot:
 * a pure view of the state and the set, which the store asks before the change enters the
 * merge window and the event log (`Store.receiveHosts`), so an edge hands over what it received
 * and never diffs against the store itself.
 */
import { type HostSpec, hostsSet, hostsUpdated, type ProxyEvent, type RawCluster } from '../events/index.js';
import { entryOf } from './names.js';
import type { HostState, State } from './state.js';

type Update = ReturnType<typeof hostsUpdated>['updates'][number];

function sameIdentity(a: HostSpec, b: HostSpec): boolean {
  return (
    a.ip === b.ip &&
    a.port === b.port &&
    a.hostname === b.hostname &&
    a.priority === b.priority &&
    a.locality.region === b.locality.region &&
    a.locality.zone === b.locality.zone &&
    a.locality.sub_zone === b.locality.sub_zone &&
    a.localityWeight === b.localityWeight
  );
}

/** The members of a cluster an edge received. */
export interface ReceivedHosts {
  cluster: string;
  hosts: HostSpec[];
  /** The discovery version they came with ('' from DNS). */
  versionInfo: string;
  /** The cluster config they were found for: none when the cluster's config is another by now. */
  config?: RawCluster;
}

/**
 * The event that takes a cluster from its members in `state` to the received ones: `hostsSet`
 * when members arrive or leave (or change priority, locality or name), or the cluster still
 * warms for its first members; `hostsUpdated` when only weights, metadata or discovery health
 * changed (which a merge window may hold); null when nothing did, or the cluster is gone or
 * configured anew since the members were looked up for it.
 */
export function hostsChange(state: State, received: ReceivedHosts): ProxyEvent | null {
  const { cluster, hosts, versionInfo, config } = received;
  const entry = entryOf(state.clusters, cluster);
  if (!entry || (config !== undefined && entry.config !== config)) return null;
  return (
    membersChange(cluster, entry.hosts, hosts, versionInfo) ??
    (entry.warming ? hostsSet({ cluster, hosts, versionInfo }) : null)
  );
}

function membersChange(
  cluster: string,
  current: readonly HostState[],
  next: HostSpec[],
  versionInfo: string,
): ProxyEvent | null {
  const byAddress = new Map(current.map((h) => [h.address, h]));
  const membershipChanged =
    current.length !== next.length ||
    new Set(next.map((h) => h.address)).size !== next.length ||
    next.some((h) => {
      const was = byAddress.get(h.address);
      return was === undefined || !sameIdentity(was, h);
    });
  if (membershipChanged) return hostsSet({ cluster, hosts: next, versionInfo });
  const updates: Update[] = [];
  for (const h of next) {
    const was = byAddress.get(h.address)!;
    const update: Update = { address: h.address };
    let changed = false;
    if (was.weight !== h.weight) {
      update.weight = h.weight;
      changed = true;
    }
    if (JSON.stringify(was.metadata) !== JSON.stringify(h.metadata)) {
      update.metadata = h.metadata;
      changed = true;
    }
    if (was.edsHealth !== h.edsHealth) {
      update.edsHealth = h.edsHealth;
      changed = true;
    }
    if (changed) updates.push(update);
  }
  return updates.length > 0 ? hostsUpdated({ cluster, updates }) : null;
}
