/** Per-host counters and gauges as `/clusters` names them. */
export interface HostCounters {
  cx_total: number;
  cx_active: number;
  cx_connect_fail: number;
  rq_total: number;
  rq_timeout: number;
  rq_success: number;
  rq_error: number;
  rq_active: number;
}

/** A host's counters before any traffic. */
export function zeroHostCounters(): HostCounters {
  return {
    cx_total: 0,
    cx_active: 0,
    cx_connect_fail: 0,
    rq_total: 0,
    rq_timeout: 0,
    rq_success: 0,
    rq_error: 0,
    rq_active: 0,
  };
}

/** Outlier detection figures of one cluster; `-1` where the last interval had too little data. */
export interface OutlierFigures {
  successRateAverage: number;
  successRateEjectionThreshold: number;
  localOriginSuccessRateAverage: number;
  localOriginSuccessRateEjectionThreshold: number;
}

/** How an active health check ended: passed, passed but degraded, answered a failure, or no answer. */
export type HealthCheckResult = 'success' | 'degraded' | 'active' | 'network';

/** The last active health check of a host, of any of its checkers. */
export interface LastHealthCheck {
  /** Store time (ms since the epoch). */
  at: number;
  result: HealthCheckResult;
}

/** Live figures the views read next to the snapshot (they are not part of it). */
export interface ClustersFigures {
  hostStats(cluster: string, address: string): HostCounters | undefined;
  /**
   * Hosts the data plane created that the snapshot does not hold (the destinations of an
   * ORIGINAL_DST cluster, the reference's CLUSTER_PROVIDED hosts), by address.
   */
  createdHosts?(cluster: string): string[];
  outlier?(cluster: string): OutlierFigures | undefined;
  hostSuccessRate?(
    cluster: string,
    address: string,
  ): { successRate: number; localOriginSuccessRate: number } | undefined;
  lastHealthCheck?(cluster: string, address: string): LastHealthCheck | undefined;
}

export const GAUGES: ReadonlySet<string> = new Set(['cx_active', 'rq_active']);
/** Counters and gauges of a host, sorted by name as the reference prints them. */
export const HOST_STAT_NAMES = [
  'cx_active',
  'cx_connect_fail',
  'cx_total',
  'rq_active',
  'rq_error',
  'rq_success',
  'rq_timeout',
  'rq_total',
] as const satisfies ReadonlyArray<keyof HostCounters>;
