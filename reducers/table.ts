/**
 * A reducer as a table keyed by event type (NgRx `createReducer`/`on`, RTK `addCase`): the
 * mapped type makes a missing or misspelt handler a compile error, and the set of event types
 * the reducer knows is the table's keys, never a second hand-kept list.
 */
import { type Draft, produce } from 'immer';
import type { Envelope } from '../events/index.js';
import type { State } from './state.js';

/** Each event of the union `E` under its `type`. */
export type EventsByType<E extends { type: string }> = { [X in E as X['type']]: X };

/** One handler per event type: it edits the draft (or, replaying, a private copy) in place. */
export type ReducerTable<E extends { type: string }> = {
  [T in keyof EventsByType<E>]: (draft: Draft<State>, env: Envelope<EventsByType<E>[T]>) => void;
};

export interface Reducer<E extends { type: string }> {
  /** Every event type the table handles. */
  readonly types: readonly E['type'][];
  /** True for an event the table handles; an event of another type (a newer log) changes nothing. */
  knows(event: { type: string }): event is E;
  /** One envelope, one `produce`; an unknown event returns the very same state. */
  reduce(state: State, env: Envelope<E>): State;
  /**
   * Folds a batch of envelopes into one snapshot, in one `produce`: the merge window
   * delivers batches, and a replay folds thousands of envelopes at a time, so the
   * copy-on-write of the big records (`clusters`) is paid once per batch, not per event.
   * The result equals folding the envelopes one by one with `reduce`.
   */
  foldAll(state: State, batch: readonly Envelope<E>[]): State;
  /**
   * Applies one envelope to a state the caller owns outright (a private deep copy), in
   * place and without immer: the very handlers `reduce` runs on a draft. An offline
   * replay folds millions of envelopes this way and copies out a snapshot only where one
   * is asked for; live snapshots always come from `reduce` / `foldAll`.
   */
  applyInPlace(state: State, env: Envelope<E>): void;
}

export function createReducer<E extends { type: string }>(table: ReducerTable<E>): Reducer<E> {
  const handlers = new Map<string, (draft: Draft<State>, env: Envelope<E>) => void>(
    // The mapped type pairs each key with the handler of that type's envelope; looked up by
    // the envelope's own `type`, the pair holds, which TypeScript cannot see through a generic E.
    Object.entries(table) as [string, (draft: Draft<State>, env: Envelope<E>) => void][],
  );
  const types = Object.freeze([...handlers.keys()] as E['type'][]);
  const knows = (event: { type: string }): event is E => handlers.has(event.type);

  const apply = (draft: Draft<State>, env: Envelope<E>): void => {
    const handler = handlers.get(env.event.type);
    if (!handler) return;
    draft.seq = env.seq;
    draft.at = env.at;
    handler(draft, env);
  };

  return {
    types,
    knows,
    reduce: (state, env) => (knows(env.event) ? produce(state, (draft) => apply(draft, env)) : state),
    foldAll(state, batch) {
      if (!batch.some((env) => knows(env.event))) return state;
      return produce(state, (draft) => {
        for (const env of batch) apply(draft, env);
      });
    },
    applyInPlace: (state, env) => apply(state as Draft<State>, env),
  };
}
