import type { Envelope, EventType, ProxyEvent } from '../events/index.js';

/** The envelope of one event type, for slice handlers. */
export type On<T extends EventType> = Envelope<Extract<ProxyEvent, { type: T }>>;
