/**
 * A listener discovery response is answered once the listeners it adds, or moves to another
 * address, are bound, as the reference binds a listener's socket before it answers: one that
 * cannot bind rejects the response (the NACK's detail is the bind error) and keeps its
 * previous config, or is not added at all if it is new. Every data-plane thread binds each
 * listener, and their outcomes reach the state folded into one (src/dataplane/workers/
 * listener-reports.ts): a listener leaves `pending` bound everywhere or failed, so none is
 * left served by some threads only. The response's other listeners stay applied, as in the
 * reference.
 */

import type { Subscription } from 'rxjs';
import { listenerAdded, listenerRemoved, type RawListener } from '../../../events/index.js';
import type { ListenerEntry, State } from '../../../reducers/index.js';
import type { Store } from '../../control/store.js';
import type { DecodedResource } from './resources.js';

/** How long a response waits for its binds; past it, what is still pending counts as bound. */
export const BIND_WAIT_MS = 30_000;

/** The listeners a response names, as they are before it is applied (undefined: none yet). */
export type ListenersBefore = Map<string, ListenerEntry | undefined>;

export function listenersBefore(state: State, resources: DecodedResource[]): ListenersBefore {
  return new Map(resources.map((r) => [r.name, state.listeners[r.name]]));
}

/**
 * The listeners of the response that the apply left waiting for their bind. After
 * `/drain_listeners` the data plane adds none of the drained direction: nothing to wait for.
 */
export function pendingBinds(state: State, before: ListenersBefore): string[] {
  const drained = (entry: ListenerEntry) =>
    state.drain.active && (!state.drain.inboundOnly || entry.config.traffic_direction === 'INBOUND');
  return [...before.keys()].filter((name) => {
    const entry = state.listeners[name];
    return entry?.state === 'pending' && !drained(entry);
  });
}

/** Resolves, once none of `names` is pending (or after `BIND_WAIT_MS`), with those that failed and why. */
export function bindFailures(
  store: Store,
  names: string[],
): Promise<Array<{ name: string; errors: string[] }>> {
  return new Promise((resolve) => {
    let subscription: Subscription | undefined;
    let settled = false;
    const finish = (state: State) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      subscription?.unsubscribe();
      resolve(
        names.flatMap((name) => {
          const entry = state.listeners[name];
          return entry?.state === 'failed' ? [{ name, errors: [entry.error ?? 'cannot bind'] }] : [];
        }),
      );
    };
    const timer = setTimeout(() => finish(store.state), BIND_WAIT_MS);
    timer.unref();
    subscription = store.state$.subscribe((state) => {
      if (names.every((name) => state.listeners[name]?.state !== 'pending')) finish(state);
    });
    // The latest snapshot is replayed at once, and may have settled before `subscription` was set.
    if (settled) subscription.unsubscribe();
  });
}

/** Puts each failed listener back as it was before the response: its previous config, or none. */
export function restoreListeners(
  store: Store,
  before: ListenersBefore,
  failed: string[],
  versionInfo: string,
): void {
  for (const name of failed) {
    const previous = before.get(name);
    if (previous)
      store.dispatch(
        listenerAdded({
          listener: previous.config as RawListener,
          versionInfo: previous.discovered?.versionInfo ?? '',
        }),
        'lds',
      );
    else store.dispatch(listenerRemoved({ name, versionInfo }), 'lds');
  }
}
