import type { ClustersFigures, HostCounters } from '../../views/clusters/figures.js';
import type { ServerContext } from '../server/context.js';

export type { OutlierFigures } from '../../views/clusters/figures.js';

/**
 * Where `/clusters` gets the live figures the data plane owns: per-host counters (the data
 * plane's `HostStats` objects fit as they are) and, for clusters with an outlier detector,
 * the success-rate figures. A source may be async, because with `--concurrency N` the
 * figures are collected from the workers at query time.
 */
export type ClusterFiguresSource = () => ClustersFigures | Promise<ClustersFigures>;

const sources = new WeakMap<ServerContext, ClusterFiguresSource>();

/** Plugs the data plane's live per-host figures into the admin of `ctx`. */
export function provideClusterFigures(ctx: ServerContext, source: ClusterFiguresSource): void {
  sources.set(ctx, source);
}

const NONE: ClustersFigures = { hostStats: (): HostCounters | undefined => undefined };

/**
 * The figures for `ctx` now, or none before the data plane registers a source (the views
 * then show zeroes and `-1`, so the admin works on its own).
 */
export async function clusterFigures(ctx: ServerContext): Promise<ClustersFigures> {
  const source = sources.get(ctx);
  return source ? source() : NONE;
}
