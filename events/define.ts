/**
 * One creator per event, each with a `.match()` type guard (the Redux Toolkit habit), so
 * edges build events without spelling `type` twice and consumers narrow without casts.
 */
export interface EventCreator<T extends string, P extends object> {
  (payload: P): { type: T } & P;
  readonly type: T;
  match(event: { type: string }): event is { type: T } & P;
}

export function defineEvent<T extends string, P extends object = Record<never, never>>(
  type: T,
): EventCreator<T, P> {
  const create = (payload: P) => ({ type, ...payload });
  return Object.assign(create, {
    type,
    match: (event: { type: string }): event is { type: T } & P => event.type === type,
  });
}

/** The event a creator builds. */
export type EventOf<C> = C extends EventCreator<infer T, infer P> ? { type: T } & P : never;
