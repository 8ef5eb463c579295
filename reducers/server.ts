import type { Draft } from 'immer';
import type { On } from './on.js';
import type { State } from './state.js';

export function onBootstrapLoaded(draft: Draft<State>, env: On<'server/bootstrap-loaded'>): void {
  const { bootstrap, options, version, sources } = env.event;
  draft.bootstrap = { config: bootstrap, sources, lastUpdated: env.at };
  draft.server.options = options;
  draft.server.version = version;
  draft.server.startedAt = env.at;
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
