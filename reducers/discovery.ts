import type { Draft } from 'immer';
import type { RawCluster } from '../events/index.js';
import { entryOf, withEntry } from './names.js';
import type { On } from './on.js';
import type { ListenerEntry, RouteConfigEntry, SecretEntry, State } from './state.js';

/** The EDS service name a cluster subscribes to: `eds_cluster_config.service_name`, else its name. */
export function edsServiceName(cluster: RawCluster): string {
  const eds = cluster.eds_cluster_config as { service_name?: string } | undefined;
  return eds?.service_name || cluster.name;
}

/** A discovered EDS cluster warms until its first endpoints (or its initial fetch timeout). */
export function warmOnAdded(draft: Draft<State>, env: On<'cluster/added'>): void {
  const cluster = entryOf(draft.clusters, env.event.cluster.name);
  if (cluster && env.event.addedViaApi && env.event.cluster.type === 'EDS') cluster.warming = true;
}

/** A config change of a warming cluster leaves it warming: its endpoints are still to come. */
export function stayWarm(draft: Draft<State>, name: string, warming: boolean): void {
  const cluster = entryOf(draft.clusters, name);
  if (cluster && warming) cluster.warming = true;
}

/** Members arrived: the cluster is warm. */
export function warmedByMembers(draft: Draft<State>, env: On<'endpoints/hosts-set'>): void {
  const cluster = entryOf(draft.clusters, env.event.cluster);
  if (cluster?.warming) delete cluster.warming;
}

export function onInitWaiting(draft: Draft<State>, env: On<'discovery/init-waiting'>): void {
  for (const target of env.event.targets)
    if (!draft.discovery.waiting.includes(target)) draft.discovery.waiting.push(target);
}

export function onInitReady(draft: Draft<State>, env: On<'discovery/init-ready'>): void {
  const done = new Set(env.event.targets);
  draft.discovery.waiting = draft.discovery.waiting.filter((t) => !done.has(t));
}

/**
 * The CDS version's one writer: cluster discovery accepted a response at `versionInfo`, or
 * the bootstrap set where it starts (`static` without cluster discovery, '' with it). A CDS
 * update writes it once, when accepted; its clusters (`discovery/clusters`, just before) do not.
 */
export function setCdsVersion(draft: Draft<State>, versionInfo: string): void {
  draft.clusterManager.versionInfo = versionInfo;
}

export function onDiscoveryAccepted(draft: Draft<State>, env: On<'discovery/accepted'>): void {
  const { kind, versionInfo } = env.event;
  // The CDS version has one home, the cluster manager's.
  if (kind === 'cds') setCdsVersion(draft, versionInfo);
  else draft.discovery.versions[kind] = versionInfo;
}

/** Clusters whose endpoints did not come in time stop warming, as with their first endpoints. */
export function onDiscoveryTimedOut(draft: Draft<State>, env: On<'discovery/fetch-timed-out'>): void {
  if (env.event.kind !== 'eds') return;
  const names = new Set(env.event.names);
  for (const cluster of Object.values(draft.clusters)) {
    if (cluster.warming && names.has(edsServiceName(cluster.config as RawCluster))) delete cluster.warming;
  }
}

export function onListenerAdded(draft: Draft<State>, env: On<'listener/added'>): void {
  const { listener, versionInfo } = env.event;
  const existing = entryOf(draft.listeners, listener.name);
  const keepsSocket =
    existing !== undefined &&
    existing.state !== 'failed' &&
    JSON.stringify(existing.config.address) === JSON.stringify(listener.address);
  draft.listeners = withEntry<ListenerEntry>(draft.listeners, listener.name, {
    name: listener.name,
    config: listener,
    lastUpdated: env.at,
    // A changed listener on the same address keeps its socket (the manager swaps its filter
    // chains in place); on a new address it binds again.
    boundAddress: keepsSocket ? (existing?.boundAddress ?? null) : null,
    state: keepsSocket && existing ? existing.state : 'pending',
    error: null,
    discovered: { versionInfo },
  });
}

export function onListenerRemoved(draft: Draft<State>, env: On<'listener/removed'>): void {
  if (Object.hasOwn(draft.listeners, env.event.name)) delete draft.listeners[env.event.name];
}

export function onRouteConfigSet(draft: Draft<State>, env: On<'route/config-set'>): void {
  const { routeConfig, versionInfo } = env.event;
  draft.discovery.routes = withEntry<RouteConfigEntry>(
    draft.discovery.routes as Record<string, RouteConfigEntry>,
    routeConfig.name,
    {
      name: routeConfig.name,
      config: routeConfig,
      versionInfo,
      lastUpdated: env.at,
    },
  );
}

export function onSecretSet(draft: Draft<State>, env: On<'secret/set'>): void {
  const { secret, versionInfo } = env.event;
  draft.discovery.secrets = withEntry<SecretEntry>(
    draft.discovery.secrets as Record<string, SecretEntry>,
    secret.name,
    { name: secret.name, config: secret, versionInfo, lastUpdated: env.at },
  );
}

export function onSecretRemoved(draft: Draft<State>, env: On<'secret/removed'>): void {
  if (Object.hasOwn(draft.discovery.secrets, env.event.name)) delete draft.discovery.secrets[env.event.name];
}

/** Copies of a rejected response: counted on the rejections of that version, no new entry. */
export function onRejectedAgain(draft: Draft<State>, env: On<'discovery/rejected-again'>): void {
  const { resource, versionInfo, count } = env.event;
  for (const r of draft.rejected)
    if (r.resource === resource && r.versionInfo === versionInfo) r.repeats = (r.repeats ?? 0) + count;
}
