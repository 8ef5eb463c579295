import type { ClustersFigures, HostCounters } from '../../views/clusters/figures.js';

/**
 * Where `/clusters` gets the live figures the data plane owns: per-host counters (the data
 * plane's `HostStats` objects fit as they are) and, for clusters with an outlier detector,
 * the success-rate figures. A source may be async, because with `--concurrency N` the
 * figures are collected from the workers at query time.
 */
export type ClusterFiguresSource = () => ClustersFigures | Promise<ClustersFigures>;

const NONE: ClustersFigures = { hostStats: (): HostCounters | undefined => undefined };

/**
 * The data plane's live figures as the admin reads them (`ctx.figures`). The data plane's
 * start provides the source; before that (or in an admin run alone) the views show zeroes
 * and `-1`.
 */
export class DataPlaneFigures {
  private source: ClusterFiguresSource | null = null;

  /** Called by `startDataPlane` once its cluster manager (or worker pool) runs. */
  provide(source: ClusterFiguresSource): void {
    this.source = source;
  }

  async read(): Promise<ClustersFigures> {
    return this.source ? this.source() : NONE;
  }
}
