import jsonpatch, { type Operation } from 'fast-json-patch';
import type { Envelope, ProxyEvent } from '../../events/index.js';
import { foldAll, type State } from '../../reducers/index.js';

/**
 * What `events` would change if dispatched now: folded into a copy of `state` (the store
 * is untouched) and returned as RFC 6902 operations against the snapshot.
 */
export function dryRun(state: State, events: readonly ProxyEvent[], at: number): Operation[] {
  const batch: Envelope<ProxyEvent>[] = events.map((event, i) => ({
    seq: state.seq + i + 1,
    at,
    source: 'dry-run',
    event,
  }));
  const next = foldAll(state, batch);
  return jsonpatch.compare(state, next).filter((op) => op.path !== '/seq' && op.path !== '/at');
}
