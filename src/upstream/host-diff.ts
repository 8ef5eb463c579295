import { type HostSpec, hostsSet, hostsUpdated, type ProxyEvent } from '../../events/index.js';
import type { HostState } from '../../reducers/state.js';

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

/**
 * The event that takes a cluster from `current` to `next` members: `hostsSet` when members
 * arrive or leave (or change priority, locality or name), `hostsUpdated` when only weights,
 * metadata or discovery health changed, null when nothing did.
 */
export function hostsChange(
  cluster: string,
  current: readonly HostState[],
  next: HostSpec[],
  versionInfo = '',
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
