/**
 * The event vocabulary: every change to the control plane is one of these. The union is
 * derived from the creators each family file exports, so a new event is its creator (here)
 * and its handler (in the reducer table, which fails to compile until it has one).
 */
import type * as cluster from './cluster.js';
import type { EventOf } from './define.js';
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
  | EventsOf<typeof stats>;

export type EventType = ProxyEvent['type'];

export * from './cluster.js';
export * from './config.js';
export * from './endpoints.js';
export * from './envelope.js';
export * from './health.js';
export * from './listeners.js';
export * from './logging.js';
export * from './runtime.js';
export * from './server.js';
export * from './stats.js';

/**
 * The cluster whose `update_merge_window` governs this event, or null when the event is
 * never merged (membership changes, and everything outside endpoint health and weights).
 */
export function mergeKey(event: ProxyEvent): string | null {
  switch (event.type) {
    case 'endpoints/hosts-updated':
    case 'health/active-changed':
    case 'health/outlier-changed':
      return event.cluster;
    default:
      return null;
  }
}
