import { DEFAULT_BUCKETS } from './bins.js';

/** One `stats_config.histogram_bucket_settings` entry: the stats it matches and their bounds. */
export interface BucketRule {
  matches: (statName: string) => boolean;
  /** Upper bounds, ascending. */
  buckets: readonly number[];
}

/**
 * The bucket bounds of each histogram: those of the first rule whose matcher takes its name
 * (the full stat name, `cluster.web.upstream_rq_time`), else the reference's defaults. What
 * `/stats`' bucket modes, Prometheus and the metrics service sink count samples against.
 */
export class HistogramBuckets {
  /** By stat name: the rules run once per histogram, not at every render. */
  private readonly chosen = new Map<string, readonly number[]>();

  constructor(private readonly rules: readonly BucketRule[] = []) {}

  of(statName: string): readonly number[] {
    if (this.rules.length === 0) return DEFAULT_BUCKETS;
    let buckets = this.chosen.get(statName);
    if (!buckets) {
      buckets = this.rules.find((r) => r.matches(statName))?.buckets ?? DEFAULT_BUCKETS;
      this.chosen.set(statName, buckets);
    }
    return buckets;
  }
}

/** No rule: every histogram has the default bounds. */
export const DEFAULT_HISTOGRAM_BUCKETS = new HistogramBuckets();
