import type { Draft } from 'immer';
import type { On } from './on.js';
import type { State } from './state.js';

export function onBootstrapLoaded(draft: Draft<State>, env: On<'server/bootstrap-loaded'>): void {
  const { bootstrap, options, version, sources, apiVersion } = env.event;
  draft.bootstrap = { config: bootstrap, ...(apiVersion && { apiVersion }), sources, lastUpdated: env.at };
  draft.server.options = options;
  draft.server.version = version;
  draft.server.startedAt = env.at;
  // A new run: until a `server/hot-restarted` says otherwise, it is epoch 0 of its own chain.
  delete draft.server.hotRestart;
  if (draft.server.state === 'PRE_INITIALIZING') draft.server.state = 'INITIALIZING';
}

export function onStateChanged(draft: Draft<State>, env: On<'server/state-changed'>): void {
  draft.server.state = env.event.state;
}

export function onHealthCheck(draft: Draft<State>, failed: boolean): void {
  draft.server.healthCheckFailed = failed;
}

export function onShutdownRequested(draft: Draft<State>): void {
  draft.server.shutdownRequested = true;
}

export function onHotRestarted(draft: Draft<State>, env: On<'server/hot-restarted'>): void {
  const { epoch, parentEpoch, firstStartedAt } = env.event;
  draft.server.hotRestart = {
    epoch,
    firstStartedAt,
    parent: { epoch: parentEpoch, step: 'handover', connections: 0 },
  };
}

export function onOverloadActionChanged(
  draft: Draft<State>,
  env: On<'server/overload-action-changed'>,
): void {
  const { action, active } = env.event;
  const now = { ...draft.server.overload };
  if (active) now[action] = true;
  else delete now[action];
  if (Object.keys(now).length > 0) draft.server.overload = now;
  else delete draft.server.overload;
}

export function onHotRestartParent(draft: Draft<State>, env: On<'server/hot-restart-parent'>): void {
  const { epoch, step, connections } = env.event;
  const hr = draft.server.hotRestart;
  if (hr?.parent.epoch === epoch) hr.parent = { epoch, step, connections };
}
