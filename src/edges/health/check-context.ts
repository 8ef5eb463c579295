import type { State } from '../../../reducers/index.js';
import { runtimeValue } from '../../../reducers/runtime.js';
import type { Store } from '../../control/store.js';
import type { Loggers } from '../../logging/loggers.js';
import type { StatsStore } from '../../stats/store.js';
import type { HealthCheckEventLogs } from './event-log.js';
import type { FirstRound } from './first-round.js';

/** What the health edges use of a server: the store they follow and dispatch to, and its stats. */
export interface HealthDeps {
  readonly store: Store;
  readonly stats: StatsStore;
  /** Where an edge reports what it cannot do (an event log it cannot write); none in unit tests. */
  readonly log?: Loggers;
}

/** What the active checks of every cluster and host share. */
export interface CheckContext {
  readonly deps: HealthDeps;
  readonly firstRound: FirstRound;
  readonly eventLogs: HealthCheckEventLogs;
  /** Whether the cluster carried traffic (its checks then leave `no_traffic_interval`). */
  hadTraffic(cluster: string): boolean;
}

/** `health_check.min_interval` / `max_interval` from the runtime, each when it holds an integer. */
export function intervalBounds(state: State): { min: number; max: number } {
  const read = (key: string, fallback: number) => {
    const raw = runtimeValue(state, key)?.trim();
    return raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : fallback;
  };
  return {
    min: read('health_check.min_interval', 0),
    max: read('health_check.max_interval', Number.MAX_SAFE_INTEGER),
  };
}
