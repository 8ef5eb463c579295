/**
 * The event vocabulary: every change to the control plane is one of these. The union is
 * derived from the creators each family file exports, so a new event is its creator (here)
 * and its handler (in the reducer table, which fails to compile until it has one).
 */
import type * as cluster from './cluster.js';
import type { EventOf } from './define.js';
import type * as discovery from './discovery.js';
import type * as endpoints from './endpoints.js';
import type * as health from './health.js';
import type * as listeners from './listeners.js';
import type * as logging from './logging.js';
import type * as runtime from './runtime.js';
import type * as server from './server.js';
import type * as stats from './stats.js';

/** The events a family file's creators build (its other exports are not creators: never). */
type EventsOf<Family> = EventOf<Family[keyof Family]>;

export type ProxyEvent =
  | EventsOf<typeof server>
  | EventsOf<typeof cluster>
  | EventsOf<typeof endpoints>
  | EventsOf<typeof health>
  | EventsOf<typeof runtime>
  | EventsOf<typeof listeners>
  | EventsOf<typeof logging>
  | EventsOf<typeof stats>
  | EventsOf<typeof discovery>;

export type EventType = ProxyEvent['type'];

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

export * from './cluster.js';
export * from './config.js';
export * from './discovery.js';
export * from './endpoints.js';
export * from './health.js';
export * from './listeners.js';
export * from './logging.js';
export * from './runtime.js';
export * from './server.js';
export * from './stats.js';

/**
 * Which merge window this event opens: the cluster whose `update_merge_window` governs it,
 * and whether the window may hold it. Endpoint health, weight and metadata updates may be
 * held; a membership change is never held but still opens the window; any other event is
 * outside every window (null). The store's merge window and the event log's checkpoint
 * rule both ask this one function.
 */
export function mergeWindowOf(event: ProxyEvent): { cluster: string; mergeable: boolean } | null {
  switch (event.type) {
    case 'endpoints/hosts-updated':
    case 'health/active-changed':
    case 'health/outlier-changed':
      return { cluster: event.cluster, mergeable: true };
    case 'endpoints/hosts-set':
      return { cluster: event.cluster, mergeable: false };
    default:
      return null;
  }
}
