/**
 * One creator per event, each with a `.match()` type guard (the Redux Toolkit habit), so
 * edges build events without spelling `type` twice and consumers narrow without casts.
 */
export interface EventCreator<T extends string, P extends object> {
  (payload: P): { type: T } & P;
  readonly type: T;
  match(event: { type: string }): event is { type: T } & P;
}

/** The creator of an event without a payload, and the way to give it one. */
export interface EventDefinition<T extends string> extends EventCreator<T, Record<never, never>> {
  /** The creator of this event carrying `P`: `defineEvent('x/y').withPayload<{ n: number }>()`. */
  withPayload<P extends object>(): EventCreator<T, P>;
}

/** Defines an event by its type, written once: the creator's type parameter is inferred from it. */
export function defineEvent<T extends string>(type: T): EventDefinition<T> {
  const creatorOf = <P extends object>(): EventCreator<T, P> =>
    Object.assign((payload: P) => ({ type, ...payload }), {
      type,
      match: (event: { type: string }): event is { type: T } & P => event.type === type,
    });
  return Object.assign(creatorOf<Record<never, never>>(), { withPayload: creatorOf });
}

/** The event a creator builds. */
export type EventOf<C> = C extends EventCreator<infer T, infer P> ? { type: T } & P : never;
