/** The event vocabulary: every change to the control plane is one of these. */
import type { ClusterEvent } from './cluster.js';
import type { EndpointsEvent } from './endpoints.js';
import type { HealthEvent } from './health.js';
import type { ListenerEvent } from './listeners.js';
import type { LoggingEvent } from './logging.js';
import type { RuntimeEvent } from './runtime.js';
import type { ServerEvent } from './server.js';
import type { StatsEvent } from './stats.js';

export type ProxyEvent =
  | ServerEvent
  | ClusterEvent
  | EndpointsEvent
  | HealthEvent
  | RuntimeEvent
  | ListenerEvent
  | LoggingEvent
  | StatsEvent;

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
