import type { ProxyEvent } from './index.js';

/**
 * An event as it entered the store: stamped once at ingestion with a sequence number,
 * the store clock's time in milliseconds, and the edge that produced it. Reducers read
 * time only from here, which is what makes a replay fold to the same snapshots.
 */
export interface Envelope<E = ProxyEvent> {
  readonly seq: number;
  readonly at: number;
  readonly source: string;
  readonly event: E;
}
