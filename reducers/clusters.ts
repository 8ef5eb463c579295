import { current, type Draft, freeze, isDraft, original } from 'immer';
import type { HostSpec, Json, Locality, RawCluster } from '../events/index.js';
import { setCdsVersion } from './discovery.js';
import { isActivelyChecked, staticHosts, waitsForFirstCheck, withHealth } from './hosts.js';
import { NO_METADATA } from './settings/endpoints.js';
import { entryOf, withEntry } from './names.js';
import type { On } from './on.js';
import { clusterSettings } from './settings/cluster.js';
import type { ClusterEntry, HostState, State } from './state.js';

function entry(cluster: RawCluster, addedViaApi: boolean, versionInfo: string, at: number): ClusterEntry {
  return {
    name: cluster.name,
    config: cluster,
    addedViaApi,
    versionInfo,
    lastUpdated: at,
    hosts: staticHosts(cluster),
  };
}

export function clustersFromBootstrap(draft: Draft<State>, env: On<'server/bootstrap-loaded'>): void {
  const resources = env.event.bootstrap.static_resources as { clusters?: Json[] } | undefined;
  draft.clusters = {};
  for (const cluster of (resources?.clusters ?? []) as RawCluster[]) {
    draft.clusters = withEntry(draft.clusters, cluster.name, entry(cluster, false, '', env.at));
  }
  const dynamic = env.event.bootstrap.dynamic_resources as { cds_config?: Json } | undefined;
  setCdsVersion(draft, dynamic?.cds_config ? '' : 'static');
}

export function onClusterAdded(draft: Draft<State>, env: On<'cluster/added'>): void {
  const { cluster, addedViaApi, versionInfo } = env.event;
  draft.clusters = withEntry(draft.clusters, cluster.name, entry(cluster, addedViaApi, versionInfo, env.at));
}

export function onClusterUpdated(draft: Draft<State>, env: On<'cluster/updated'>): void {
  const { cluster, versionInfo } = env.event;
  const existing = entryOf(draft.clusters, cluster.name);
  if (!existing) return;
  const fresh = entry(cluster, existing.addedViaApi, versionInfo, env.at);
  // Members found by DNS or discovery outlive a config change; only config-listed ones follow
  // it, keeping the verdicts of the members that stay.
  const base = (isDraft(existing.hosts) ? current(existing.hosts) : existing.hosts) as HostState[];
  const before = new Map(base.map((h) => [h.address, h]));
  const checked = isActivelyChecked(cluster);
  const pending = waitsForFirstCheck(cluster);
  const kept = fresh.hosts.length === 0;
  const hosts = kept ? base : fresh.hosts.map((h) => withHealth(h, before.get(h.address), checked, pending));
  fresh.hosts = kept ? (existing.hosts as HostState[]) : hosts;
  // A config that drops its health checks leaves no member failing them.
  if (!checked && isActivelyChecked(existing.config as RawCluster) && hosts.some((h) => h.failedActiveHc))
    fresh.hosts = hosts.map((h) => (h.failedActiveHc ? { ...h, failedActiveHc: false } : h));
  draft.clusters = withEntry(draft.clusters, cluster.name, fresh);
}

export function onClusterRemoved(draft: Draft<State>, env: On<'cluster/removed'>): void {
  if (Object.hasOwn(draft.clusters, env.event.name)) delete draft.clusters[env.event.name];
}

export function onHostsSet(draft: Draft<State>, env: On<'endpoints/hosts-set'>): void {
  const cluster = entryOf(draft.clusters, env.event.cluster);
  if (!cluster) return;
  // With 10k members, reading them through draft proxies and letting immer walk 10k new
  // records to freeze them was most of an EDS update: read the base, hand over frozen records.
  // Within a batch an earlier event may have changed the members: then read them as they are now.
  const base = (isDraft(cluster.hosts) ? current(cluster.hosts) : cluster.hosts) as HostState[];
  const checked = isActivelyChecked(cluster.config as RawCluster);
  const pending = waitsForFirstCheck(cluster.config as RawCluster);
  const localities = new Localities();
  // Discovery mostly lists members in the same order: look a member up by address only
  // once one is not where it was, so most updates build no map of 10k addresses.
  let previous: Map<string, HostState> | null = null;
  const hosts = env.event.hosts.map((spec, i) => {
    let was: HostState | undefined = base[i];
    if (was?.address !== spec.address) {
      previous ??= byAddress(base);
      was = previous.get(spec.address);
    }
    // A member discovery describes as before keeps its record: no copy, and no new objects to hold.
    if (was !== undefined && Object.isFrozen(was) && unchanged(spec, was, checked)) return was;
    const host = withHealth(spec, was, checked, pending);
    host.locality = localities.of(spec.locality, was?.locality);
    host.metadata = isEmpty(spec.metadata) ? NO_METADATA : freeze(spec.metadata, true);
    return Object.freeze(host);
  });
  if (keepsHealthyRemovedHosts(cluster.config as RawCluster)) {
    const listed = new Set(env.event.hosts.map((spec) => spec.address));
    for (const host of base) {
      if (listed.has(host.address) || host.failedActiveHc || edsFailed(host)) continue;
      hosts.push(host.pendingDynamicRemoval ? host : Object.freeze({ ...host, pendingDynamicRemoval: true }));
    }
  }
  cluster.hosts = Object.freeze(hosts) as Draft<HostState>[];
}

function byAddress(hosts: readonly HostState[]): Map<string, HostState> {
  const map = new Map<string, HostState>();
  for (const host of hosts) map.set(host.address, host);
  return map;
}

function isEmpty(object: object): boolean {
  for (const _ in object) return false;
  return true;
}

function sameLocality(a: Locality, b: Locality): boolean {
  return a === b || (a.region === b.region && a.zone === b.zone && a.sub_zone === b.sub_zone);
}

/**
 * True when `withHealth(spec, was)` would equal `was` field for field: the same description,
 * and no flag of `was` that a fresh record drops (pending removal, degraded) or changes.
 */
function unchanged(spec: HostSpec, was: HostState, checked: boolean): boolean {
  return (
    spec.ip === was.ip &&
    spec.port === was.port &&
    spec.hostname === was.hostname &&
    spec.weight === was.weight &&
    spec.priority === was.priority &&
    spec.edsHealth === was.edsHealth &&
    spec.localityWeight === was.localityWeight &&
    sameLocality(spec.locality, was.locality) &&
    (spec.metadata === was.metadata || (isEmpty(spec.metadata) && was.metadata === NO_METADATA)) &&
    was.pendingDynamicRemoval === undefined &&
    was.degradedActiveHc === undefined &&
    (was.pendingActiveHc === undefined || checked)
  );
}

/** The frozen locality objects the records of one update share: one per distinct locality. */
class Localities {
  private readonly known = new Map<string, Locality>();
  private last: Locality | null = null;

  /** A frozen locality equal to `locality`: the member's previous one, the last one handed out, or a shared one. */
  of(locality: Locality, previous: Locality | undefined): Locality {
    if (previous !== undefined && sameLocality(locality, previous)) return previous;
    if (this.last !== null && sameLocality(locality, this.last)) return this.last;
    const key = `${locality.region}\n${locality.zone}\n${locality.sub_zone}`;
    let shared = this.known.get(key);
    if (shared === undefined) {
      shared = Object.freeze(locality);
      this.known.set(key, shared);
    }
    this.last = shared;
    return shared;
  }
}

/**
 * As in the reference, an actively checked cluster keeps members that discovery dropped while
 * they pass their checks, unless `drain_connections_on_host_removal` asks to let them go at once.
 */
function keepsHealthyRemovedHosts(cluster: RawCluster): boolean {
  return isActivelyChecked(cluster) && cluster.drain_connections_on_host_removal !== true;
}

function edsFailed(host: HostState): boolean {
  return host.edsHealth === 'UNHEALTHY' || host.edsHealth === 'DRAINING' || host.edsHealth === 'TIMEOUT';
}

/**
 * Changes one member. Searching a draft array would make immer create a proxy for every
 * member passed over (10k in a big cluster), so the position is found on the plain array
 * and only that member is drafted (checked, in case an earlier event of the same batch
 * moved members). Members that are not drafts are either new in this fold (mutable: changed
 * in place) or were set frozen earlier in the batch (immer does not draft those: the
 * member is replaced by a changed copy).
 */
function changeHost(
  draft: Draft<State>,
  clusterName: string,
  address: string,
  change: (host: HostState) => void,
): void {
  const cluster = entryOf(draft.clusters, clusterName);
  if (!cluster) return;
  const hosts = cluster.hosts as HostState[];
  if (isDraft(hosts)) {
    const index = (original(hosts) as HostState[]).findIndex((h) => h.address === address);
    const candidate = index >= 0 ? hosts[index] : undefined;
    const host = candidate?.address === address ? candidate : hosts.find((h) => h.address === address);
    if (host) change(host);
    return;
  }
  const index = hosts.findIndex((h) => h.address === address);
  const host = hosts[index];
  if (!host) return;
  if (!Object.isFrozen(host)) {
    change(host);
    return;
  }
  const copy = { ...host };
  change(copy);
  if (Object.isFrozen(hosts)) {
    const next = hosts.slice();
    next[index] = copy;
    cluster.hosts = next;
  } else hosts[index] = copy;
}

export function onHostsUpdated(draft: Draft<State>, env: On<'endpoints/hosts-updated'>): void {
  for (const update of env.event.updates) {
    changeHost(draft, env.event.cluster, update.address, (host) => {
      if (update.weight !== undefined) host.weight = update.weight;
      if (update.metadata !== undefined) host.metadata = update.metadata;
      if (update.edsHealth !== undefined) host.edsHealth = update.edsHealth;
    });
  }
}

export function onActiveHealthChanged(draft: Draft<State>, env: On<'health/active-changed'>): void {
  const { cluster: name, address, healthy } = env.event;
  const cluster = entryOf(draft.clusters, name);
  if (!healthy && cluster) {
    // A member kept only while it passed its checks leaves once it fails one.
    const base = (isDraft(cluster.hosts) ? current(cluster.hosts) : cluster.hosts) as HostState[];
    if (base.some((h) => h.address === address && h.pendingDynamicRemoval)) {
      cluster.hosts = Object.freeze(base.filter((h) => h.address !== address)) as Draft<HostState>[];
      return;
    }
  }
  changeHost(draft, env.event.cluster, env.event.address, (host) => {
    // A verdict told again (a waiting member's first check) is no change of it.
    const degraded = env.event.degraded === true;
    if (host.failedActiveHc === env.event.healthy || (host.degradedActiveHc === true) !== degraded)
      host.activeHcChangedAt = env.at;
    host.failedActiveHc = !env.event.healthy;
    if (host.pendingActiveHc) delete host.pendingActiveHc;
    if (degraded) host.degradedActiveHc = true;
    else if (host.degradedActiveHc) delete host.degradedActiveHc;
  });
}

export function onOutlierChanged(draft: Draft<State>, env: On<'health/outlier-changed'>): void {
  const { ejected, reason } = env.event;
  changeHost(draft, env.event.cluster, env.event.address, (host) => {
    host.failedOutlierCheck = ejected;
    if (ejected) host.lastEjection = { at: env.at, reason };
    else if (host.lastEjection && host.lastEjection.endedAt === undefined)
      host.lastEjection = { ...host.lastEjection, endedAt: env.at };
  });
}

/**
 * How many rejections the state keeps, newest last. A management server can send a new bad
 * version for ever; each is still in the event log and the timeline, but the state (copied into
 * every snapshot and every worker) must not grow with them.
 */
export const MAX_REJECTED = 256;

export function onUpdateRejected(draft: Draft<State>, env: On<'cluster/update-rejected'>): void {
  const { resource, name, versionInfo, errors } = env.event;
  draft.rejected.push({
    seq: env.seq,
    at: env.at,
    resource,
    name,
    versionInfo,
    errors,
  });
  if (draft.rejected.length > MAX_REJECTED) draft.rejected.splice(0, draft.rejected.length - MAX_REJECTED);
}

/** How long the merge window of `cluster` stays open: its `update_merge_window`, 0 if unknown. */
export function mergeWindowMs(state: State, cluster: string): number {
  const entry = entryOf(state.clusters, cluster);
  return entry ? clusterSettings(entry.config).updateMergeWindowMs : 0;
}
