import type { Draft } from 'immer';
import type { Json, RawListener } from '../events/index.js';
import { hostKey } from './settings/endpoints.js';
import { entryOf, withEntry } from './names.js';
import type { On } from './on.js';
import type { ListenerEntry, State } from './state.js';

export function listenersFromBootstrap(draft: Draft<State>, env: On<'server/bootstrap-loaded'>): void {
  const resources = env.event.bootstrap.static_resources as { listeners?: Json[] } | undefined;
  draft.listeners = {};
  for (const listener of (resources?.listeners ?? []) as RawListener[]) {
    draft.listeners = withEntry<ListenerEntry>(draft.listeners, listener.name, {
      name: listener.name,
      config: listener,
      lastUpdated: env.at,
      boundAddress: null,
      state: 'pending',
      error: null,
    });
  }
}

export function onListenerBound(draft: Draft<State>, env: On<'listener/bound'>): void {
  const listener = entryOf(draft.listeners, env.event.name);
  if (!listener) return;
  const { address, port } = env.event;
  listener.boundAddress = hostKey(address, port);
  listener.state = draft.drain.active && affectedByDrain(draft, listener.config) ? 'draining' : 'active';
}

export function onListenerBindFailed(draft: Draft<State>, env: On<'listener/bind-failed'>): void {
  const listener = entryOf(draft.listeners, env.event.name);
  if (!listener) return;
  listener.state = 'failed';
  listener.error = env.event.error;
}

function affectedByDrain(draft: Draft<State>, config: RawListener): boolean {
  return !draft.drain.inboundOnly || config.traffic_direction === 'INBOUND';
}

export function onDrainStarted(draft: Draft<State>, env: On<'listener/drain-started'>): void {
  const { inboundOnly, graceful, strategy, drainTimeMs } = env.event;
  // A second, wider drain widens the first; it never narrows it.
  const widen = draft.drain.active && !draft.drain.inboundOnly ? false : inboundOnly;
  draft.drain = {
    active: true,
    inboundOnly: widen,
    graceful,
    strategy,
    startedAt: env.at,
    drainTimeMs,
  };
  for (const listener of Object.values(draft.listeners)) {
    if (listener.state === 'active' && affectedByDrain(draft, listener.config as RawListener)) {
      listener.state = 'draining';
    }
  }
}

export function onListenersStopped(draft: Draft<State>, env: On<'listener/stopped'>): void {
  for (const name of env.event.names) {
    const listener = entryOf(draft.listeners, name);
    if (listener) listener.state = 'stopped';
  }
}
