import { OUTLIER_NUMBERS, type OutlierSettings } from '../../config/health.js';
import type { Counter, Gauge, Scope } from '../../stats/store.js';

/** Why a host was ejected: the reference's ejection types, as the stats and events name them. */
export type EjectionType =
  | 'consecutive_5xx'
  | 'consecutive_gateway_failure'
  | 'consecutive_local_origin_failure'
  | 'success_rate'
  | 'local_origin_success_rate'
  | 'failure_percentage'
  | 'failure_percentage_local_origin';

export const EJECTION_TYPES: readonly EjectionType[] = [
  'consecutive_5xx',
  'consecutive_gateway_failure',
  'consecutive_local_origin_failure',
  'success_rate',
  'local_origin_success_rate',
  'failure_percentage',
  'failure_percentage_local_origin',
];

/** The `enforcing_*` percentage of each ejection type. */
export const ENFORCING: Record<EjectionType, keyof OutlierSettings> = {
  consecutive_5xx: 'enforcingConsecutive5xx',
  consecutive_gateway_failure: 'enforcingConsecutiveGatewayFailure',
  consecutive_local_origin_failure: 'enforcingConsecutiveLocalOriginFailure',
  success_rate: 'enforcingSuccessRate',
  local_origin_success_rate: 'enforcingLocalOriginSuccessRate',
  failure_percentage: 'enforcingFailurePercentage',
  failure_percentage_local_origin: 'enforcingFailurePercentageLocalOrigin',
};

/**
 * The reference's `OutlierEjectionType` name of each ejection type, for the event log
 * (`cluster_manager.outlier_detection.event_log_path`: one `OutlierDetectionEvent` per line).
 */
export const LOGGED_TYPE: Record<EjectionType, string> = {
  consecutive_5xx: 'CONSECUTIVE_5XX',
  consecutive_gateway_failure: 'CONSECUTIVE_GATEWAY_FAILURE',
  consecutive_local_origin_failure: 'CONSECUTIVE_LOCAL_ORIGIN_FAILURE',
  success_rate: 'SUCCESS_RATE',
  local_origin_success_rate: 'SUCCESS_RATE_LOCAL_ORIGIN',
  failure_percentage: 'FAILURE_PERCENTAGE',
  failure_percentage_local_origin: 'FAILURE_PERCENTAGE_LOCAL_ORIGIN',
};

/** Runtime key of each numeric setting: `outlier_detection.<config field>`. */
export const RUNTIME_KEY = new Map<keyof OutlierSettings, string>([
  ...OUTLIER_NUMBERS.map(
    ([field, key]) => [field, `outlier_detection.${key}`] as [keyof OutlierSettings, string],
  ),
  ['intervalMs', 'outlier_detection.interval_ms'],
  ['baseEjectionTimeMs', 'outlier_detection.base_ejection_time_ms'],
]);

/** Requests and successes of one origin in the current interval. */
export interface Bucket {
  total: number;
  success: number;
}

/** The reference's `DetectorHostMonitorImpl`: one host's counters and ejection record. */
export interface HostMonitor {
  address: string;
  ejected: boolean;
  numEjections: number;
  lastEjectionAt: number;
  /** When the host was last ejected or returned (the log's `secs_since_last_action`), null before. */
  lastActionAt: number | null;
  lastType: EjectionType;
  consecutive5xx: number;
  consecutiveGatewayFailure: number;
  consecutiveLocalOriginFailure: number;
  external: Bucket;
  local: Bucket;
  /** Success rates of the last interval, -1 when its volume was too low. */
  successRate: number;
  localOriginSuccessRate: number;
}

export class OutlierStats {
  readonly active: Gauge;
  readonly overflow: Counter;
  readonly enforcedTotal: Counter;
  readonly detected = new Map<EjectionType, Counter>();
  readonly enforced = new Map<EjectionType, Counter>();
  constructor(scope: Scope) {
    this.active = scope.gauge('ejections_active', 'Accumulate');
    this.overflow = scope.counter('ejections_overflow');
    this.enforcedTotal = scope.counter('ejections_enforced_total');
    for (const type of EJECTION_TYPES) {
      this.detected.set(type, scope.counter(`ejections_detected_${type}`));
      this.enforced.set(type, scope.counter(`ejections_enforced_${type}`));
    }
  }
}
