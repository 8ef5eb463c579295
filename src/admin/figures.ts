import type { ClustersFigures, HostCounters } from '../../views/clusters/figures.js';
import type { ServerContext } from '../server/context.js';

export type { OutlierFigures } from '../../views/clusters/figures.js';

/**
 * Live figures the data plane owns and `/clusters` shows: per-host counters (the data
 * plane's `HostStats` objects fit as they are), and for clusters with an outlier detector
 * the success-rate figures. The data plane registers one provider per server with
 * `provideClusterFigures(ctx, provider)`; until it does, every host shows zero counters and
 * `-1` rates, so the admin works on its own.
 */
export type ClusterFiguresProvider = ClustersFigures;

const providers = new WeakMap<ServerContext, ClusterFiguresProvider>();

/** Plugs the data plane's live per-host figures into the admin of `ctx`. */
export function provideClusterFigures(ctx: ServerContext, provider: ClusterFiguresProvider): void {
  providers.set(ctx, provider);
}

const NONE: ClusterFiguresProvider = { hostStats: (): HostCounters | undefined => undefined };

/** The provider for `ctx`, or one that reports nothing (the views then show zeroes and `-1`). */
export function clusterFigures(ctx: ServerContext): ClusterFiguresProvider {
  return providers.get(ctx) ?? NONE;
}
