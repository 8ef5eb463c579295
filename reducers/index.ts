/**
 * The root reducer: one handler per event type, each editing the draft through the slice
 * functions. A new event type that has a creator in `events/` and no entry here does not
 * compile; the set of known types is this table's keys.
 */
import { clusterAdded, clusterRemoved, clusterUpdated, type ProxyEvent } from '../events/index.js';
import * as clusters from './clusters.js';
import * as discovery from './discovery.js';
import * as listeners from './listeners.js';
import * as logging from './logging.js';
import { entryOf } from './names.js';
import * as runtime from './runtime.js';
import * as server from './server.js';
import * as stats from './stats.js';
import { createReducer, type ReducerTable } from './table.js';

export { mergeWindowMs } from './clusters.js';
export { entryOf } from './names.js';
export * from './state.js';

export const handlers: ReducerTable<ProxyEvent> = {
  'server/bootstrap-loaded': (draft, env) => {
    server.onBootstrapLoaded(draft, env);
    clusters.clustersFromBootstrap(draft, env);
    listeners.listenersFromBootstrap(draft, env);
    runtime.runtimeFromBootstrap(draft, env);
  },
  'server/state-changed': server.onStateChanged,
  'server/healthcheck-failed': (draft) => server.onHealthCheck(draft, true),
  'server/healthcheck-ok': (draft) => server.onHealthCheck(draft, false),
  'server/shutdown-requested': server.onShutdownRequested,
  'server/hot-restarted': server.onHotRestarted,
  'server/hot-restart-parent': server.onHotRestartParent,
  'server/overload-action-changed': server.onOverloadActionChanged,
  // The drain's end changes nothing a view shows: the process stops next.
  'server/drain-ended': () => {},
  // One cluster per event is how logs written before `discovery/clusters` hold a CDS update
  // (nothing dispatches these now): each stands for an update accepted at its version, as
  // they were folded then (an update or removal without a version keeps the last one).
  'cluster/added': (draft, env) => {
    clusters.onClusterAdded(draft, env);
    discovery.warmOnAdded(draft, env);
    if (env.event.addedViaApi) discovery.setCdsVersion(draft, env.event.versionInfo);
  },
  'cluster/updated': (draft, env) => {
    const warming = entryOf(draft.clusters, env.event.cluster.name)?.warming === true;
    clusters.onClusterUpdated(draft, env);
    discovery.stayWarm(draft, env.event.cluster.name, warming);
    if (env.event.versionInfo) discovery.setCdsVersion(draft, env.event.versionInfo);
  },
  'cluster/removed': (draft, env) => {
    clusters.onClusterRemoved(draft, env);
    if (env.event.versionInfo) discovery.setCdsVersion(draft, env.event.versionInfo);
  },
  'cluster/update-rejected': clusters.onUpdateRejected,
  'endpoints/hosts-set': (draft, env) => {
    clusters.onHostsSet(draft, env);
    discovery.warmedByMembers(draft, env);
  },
  'endpoints/hosts-updated': clusters.onHostsUpdated,
  'health/active-changed': clusters.onActiveHealthChanged,
  'health/outlier-changed': clusters.onOutlierChanged,
  'runtime/modified': runtime.onRuntimeModified,
  'runtime/layer-loaded': runtime.onRuntimeLayerLoaded,
  'listener/bound': listeners.onListenerBound,
  'listener/bind-failed': listeners.onListenerBindFailed,
  'listener/drain-started': listeners.onDrainStarted,
  'listener/stopped': listeners.onListenersStopped,
  'logging/levels-changed': logging.onLevelsChanged,
  'stats/counters-reset': stats.onCountersReset,
  'stats/recent-lookups-enabled': stats.onRecentLookupsEnabled,
  'stats/recent-lookups-disabled': stats.onRecentLookupsDisabled,
  'stats/recent-lookups-cleared': stats.onRecentLookupsCleared,
  'discovery/clusters': (draft, env) => {
    // The same slice steps as one cluster event each, in one fold.
    const { versionInfo, added, updated, removed, versions } = env.event;
    const as = <E extends ProxyEvent>(event: E) => ({ ...env, event });
    const versionOf = (name: string) => versions?.[name] ?? versionInfo;
    for (const cluster of added) {
      const one = as(clusterAdded({ cluster, addedViaApi: true, versionInfo: versionOf(cluster.name) }));
      clusters.onClusterAdded(draft, one);
      discovery.warmOnAdded(draft, one);
    }
    for (const cluster of updated) {
      const warming = entryOf(draft.clusters, cluster.name)?.warming === true;
      clusters.onClusterUpdated(draft, as(clusterUpdated({ cluster, versionInfo: versionOf(cluster.name) })));
      discovery.stayWarm(draft, cluster.name, warming);
    }
    for (const name of removed) clusters.onClusterRemoved(draft, as(clusterRemoved({ name, versionInfo })));
    // The CDS version moves with `discovery/accepted`, which follows (delta's system version too).
  },
  'discovery/accepted': discovery.onDiscoveryAccepted,
  'discovery/init-waiting': discovery.onInitWaiting,
  'discovery/init-ready': discovery.onInitReady,
  'discovery/fetch-timed-out': discovery.onDiscoveryTimedOut,
  'listener/added': discovery.onListenerAdded,
  'listener/removed': discovery.onListenerRemoved,
  'route/config-set': discovery.onRouteConfigSet,
  'discovery/rejected-again': discovery.onRejectedAgain,
  'secret/set': discovery.onSecretSet,
  'secret/removed': discovery.onSecretRemoved,
};

const root = createReducer(handlers);

/** Every event type the reducer handles, derived from the table. */
export const eventTypes = root.types;
export const isKnownEvent = root.knows;
export const rootReducer = root.reduce;
export const foldAll = root.foldAll;
export const applyInPlace = root.applyInPlace;
