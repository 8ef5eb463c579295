/**
 * The root reducer: one `produce` per envelope, dispatching on `type` to slice handlers
 * that edit the draft. The exhaustive switch makes an event nobody handles a build error.
 */
import { type Draft, produce } from 'immer';
import type { Envelope, EventType, ProxyEvent } from '../events/index.js';
import * as clusters from './clusters.js';
import * as listeners from './listeners.js';
import * as logging from './logging.js';
import type { On } from './on.js';
import * as runtime from './runtime.js';
import * as server from './server.js';
import type { State } from './state.js';
import * as stats from './stats.js';

export * from './state.js';

export function rootReducer(state: State, env: Envelope<ProxyEvent>): State {
  if (!isKnown(env.event)) return state;
  return produce(state, (draft) => {
    draft.seq = env.seq;
    draft.at = env.at;
    apply(draft, env);
  });
}

function apply(draft: Draft<State>, env: Envelope<ProxyEvent>): void {
  const event = env.event;
  switch (event.type) {
    case 'server/bootstrap-loaded': {
      const e = env as On<typeof event.type>;
      server.onBootstrapLoaded(draft, e);
      clusters.clustersFromBootstrap(draft, e);
      listeners.listenersFromBootstrap(draft, e);
      runtime.runtimeFromBootstrap(draft, e);
      return;
    }
    case 'server/state-changed':
      server.onStateChanged(draft, env as On<typeof event.type>);
      break;
    case 'server/healthcheck-failed':
      server.onHealthCheck(draft, true);
      break;
    case 'server/healthcheck-ok':
      server.onHealthCheck(draft, false);
      break;
    case 'server/shutdown-requested':
      server.onShutdownRequested(draft);
      break;
    case 'cluster/added':
      clusters.onClusterAdded(draft, env as On<typeof event.type>);
      break;
    case 'cluster/updated':
      clusters.onClusterUpdated(draft, env as On<typeof event.type>);
      break;
    case 'cluster/removed':
      clusters.onClusterRemoved(draft, env as On<typeof event.type>);
      break;
    case 'cluster/update-rejected':
      clusters.onUpdateRejected(draft, env as On<typeof event.type>);
      break;
    case 'endpoints/hosts-set':
      clusters.onHostsSet(draft, env as On<typeof event.type>);
      break;
    case 'endpoints/hosts-updated':
      clusters.onHostsUpdated(draft, env as On<typeof event.type>);
      break;
    case 'health/active-changed':
      clusters.onActiveHealthChanged(draft, env as On<typeof event.type>);
      break;
    case 'health/outlier-changed':
      clusters.onOutlierChanged(draft, env as On<typeof event.type>);
      break;
    case 'runtime/modified':
      runtime.onRuntimeModified(draft, env as On<typeof event.type>);
      break;
    case 'runtime/layer-loaded':
      runtime.onRuntimeLayerLoaded(draft, env as On<typeof event.type>);
      break;
    case 'listener/bound':
      listeners.onListenerBound(draft, env as On<typeof event.type>);
      break;
    case 'listener/bind-failed':
      listeners.onListenerBindFailed(draft, env as On<typeof event.type>);
      break;
    case 'listener/drain-started':
      listeners.onDrainStarted(draft, env as On<typeof event.type>);
      break;
    case 'listener/stopped':
      listeners.onListenersStopped(draft, env as On<typeof event.type>);
      break;
    case 'logging/levels-changed':
      logging.onLevelsChanged(draft, env as On<typeof event.type>);
      break;
    case 'stats/counters-reset':
      stats.onCountersReset(draft, env as On<typeof event.type>);
      break;
    case 'stats/recent-lookups-enabled':
    case 'stats/recent-lookups-disabled':
    case 'stats/recent-lookups-cleared':
      stats.onRecentLookups(draft, env as On<typeof event.type>);
      break;
    default: {
      const unhandled: never = event;
      throw new Error(`unhandled event ${JSON.stringify(unhandled)}`);
    }
  }
}

/** Every type the switch above handles; an event of another type (a newer log) changes nothing. */
const KNOWN: ReadonlySet<string> = new Set<EventType>([
  'server/bootstrap-loaded',
  'server/state-changed',
  'server/healthcheck-failed',
  'server/healthcheck-ok',
  'server/shutdown-requested',
  'cluster/added',
  'cluster/updated',
  'cluster/removed',
  'cluster/update-rejected',
  'endpoints/hosts-set',
  'endpoints/hosts-updated',
  'health/active-changed',
  'health/outlier-changed',
  'runtime/modified',
  'runtime/layer-loaded',
  'listener/bound',
  'listener/bind-failed',
  'listener/drain-started',
  'listener/stopped',
  'logging/levels-changed',
  'stats/counters-reset',
  'stats/recent-lookups-enabled',
  'stats/recent-lookups-disabled',
  'stats/recent-lookups-cleared',
]);

function isKnown(event: { type: string }): event is ProxyEvent {
  return KNOWN.has(event.type);
}

/**
 * Applies one envelope to a state the caller owns outright (a private deep copy), in
 * place and without immer: the very handlers `rootReducer` runs on a draft. An offline
 * replay folds millions of envelopes this way and copies out a snapshot only where one
 * is asked for; live snapshots always come from `rootReducer` / `foldAll`.
 */
export function applyInPlace(state: State, env: Envelope<ProxyEvent>): void {
  if (!isKnown(env.event)) return;
  state.seq = env.seq;
  state.at = env.at;
  apply(state as Draft<State>, env);
}

/**
 * Folds a batch of envelopes into one snapshot, in one `produce`: the merge window
 * delivers batches, and a replay folds thousands of envelopes at a time, so the
 * copy-on-write of the big records (`clusters`) is paid once per batch, not per event.
 * The result equals folding the envelopes one by one with `rootReducer`.
 */
export function foldAll(state: State, batch: readonly Envelope<ProxyEvent>[]): State {
  if (!batch.some((env) => isKnown(env.event))) return state;
  return produce(state, (draft) => {
    for (const env of batch) {
      if (!isKnown(env.event)) continue;
      draft.seq = env.seq;
      draft.at = env.at;
      apply(draft, env);
    }
  });
}
