import type { Operation } from 'fast-json-patch';
import type { Envelope, ProxyEvent } from '../../events/index.js';
import { foldAll, type State } from '../../reducers/index.js';
import { semanticDiff } from '../../views/snapshot-diff.js';

/**
 * What `events` would change if dispatched now: folded into a copy of `state` (the store
 * is untouched; snapshots are immutable, so the fold cannot reach the live one) and
 * returned as semantic RFC 6902 operations, the same keyed form `/snapshots/diff` uses
 * (`/clusters/svc/hosts/10.0.0.1:80/weight`, not an array index). Events are folded as one
 * batch, without the merge window: a dry run shows the effect, not its timing.
 */
export function dryRun(state: State, events: readonly ProxyEvent[], at: number): Operation[] {
  const batch: Envelope<ProxyEvent>[] = events.map((event, i) => ({
    seq: state.seq + i + 1,
    at,
    source: 'dry-run',
    event,
  }));
  return semanticDiff(state, foldAll(state, batch));
}
