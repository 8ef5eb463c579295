import type { ServerContext } from '../server/context.js';
import type { HostStats } from '../upstream/types.js';

/** Outlier detection figures of one cluster; `-1` where the last interval had too little data. */
export interface OutlierFigures {
  successRateAverage: number;
  successRateEjectionThreshold: number;
  localOriginSuccessRateAverage: number;
  localOriginSuccessRateEjectionThreshold: number;
}

/**
 * Live figures the data plane owns and `/clusters` shows. The data plane registers one
 * provider per server with `provideClusterFigures(ctx, provider)`; until it does, every
 * host shows zero counters and `-1` rates, so the admin works on its own.
 */
export interface ClusterFiguresProvider {
  hostStats(cluster: string, address: string): HostStats | undefined;
  /** Present only for clusters that have an outlier detector. */
  outlier?(cluster: string): OutlierFigures | undefined;
  /** Host success rates (0..100) from outlier detection, `-1` when not computed. */
  hostSuccessRate?(
    cluster: string,
    address: string,
  ): { successRate: number; localOriginSuccessRate: number } | undefined;
}

const providers = new WeakMap<ServerContext, ClusterFiguresProvider>();

/** Plugs the data plane's live per-host figures into the admin of `ctx`. */
export function provideClusterFigures(ctx: ServerContext, provider: ClusterFiguresProvider): void {
  providers.set(ctx, provider);
}

export const ZERO_HOST_STATS: Readonly<HostStats> = Object.freeze({
  cx_total: 0,
  cx_active: 0,
  cx_connect_fail: 0,
  rq_total: 0,
  rq_timeout: 0,
  rq_success: 0,
  rq_error: 0,
  rq_active: 0,
});

/** The provider for `ctx`, or one that reports zeroes and no outlier data. */
export function clusterFigures(ctx: ServerContext): ClusterFiguresProvider {
  return providers.get(ctx) ?? { hostStats: () => ZERO_HOST_STATS };
}
