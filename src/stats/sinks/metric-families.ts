/**
 * A flush as the metrics service sink sends it: one Prometheus `MetricFamily` per stat
 * (io.prometheus.client, proto/io/prometheus/client.proto), as the reference's
 * `MetricsFlusher` builds them. Counters carry their value since start or, with
 * `report_counters_as_deltas`, what they counted since the last flush; a histogram is a
 * summary of the interval the flush closed, a histogram of it with its bucket bounds, or both.
 */
import { cumulativeCounts, quantiles } from '../bins.js';
import type { HistogramBuckets } from '../buckets.js';
import type { Histogram } from '../store.js';
import type { TagProducer } from '../tags.js';
import type { MetricSnapshot } from './snapshot.js';
import { referenceTagName } from './statsd-lines.js';

/** The quantiles of a summary: the reference's `supportedQuantiles`. */
export const SUMMARY_QUANTILES = [0, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 1] as const;

/** `io.prometheus.client.MetricType`. */
export const METRIC_TYPE = { COUNTER: 0, GAUGE: 1, SUMMARY: 2, HISTOGRAM: 4 } as const;

export interface MetricFamily {
  name: string;
  type: number;
  metric: Array<Record<string, unknown>>;
}

export interface FamilyOptions {
  countersAsDeltas: boolean;
  /** `emit_tags_as_labels`: tag-extracted names, the tags as labels; null: full names. */
  tags: TagProducer | null;
  summary: boolean;
  histogram: boolean;
  /** Each histogram's bucket bounds. */
  buckets: HistogramBuckets;
}

/** Builds the families of each flush; a stat's name and labels are worked out once. */
export class FamilyMaker {
  private readonly named = new WeakMap<
    object,
    { name: string; label: Array<{ name: string; value: string }> }
  >();

  constructor(private readonly options: FamilyOptions) {}

  private family(
    stat: { name: string },
    type: number,
    value: Record<string, unknown>,
    at: number,
  ): MetricFamily {
    let named = this.named.get(stat);
    if (!named) {
      const tags = this.options.tags;
      if (tags) {
        const extracted = tags.extract(stat.name);
        named = {
          name: extracted.name,
          label: extracted.tags.map((t) => ({ name: referenceTagName(t), value: t.value })),
        };
      } else named = { name: stat.name, label: [] };
      this.named.set(stat, named);
    }
    return { name: named.name, type, metric: [{ label: named.label, timestamp_ms: at, ...value }] };
  }

  private summary(h: Histogram): Record<string, unknown> {
    const w = h.interval;
    const values = quantiles(w?.bins ?? null, SUMMARY_QUANTILES);
    return {
      summary: {
        sample_count: w?.count ?? 0,
        sample_sum: w?.sum ?? 0,
        quantile: SUMMARY_QUANTILES.map((quantile, i) => ({ quantile, value: values[i] })),
      },
    };
  }

  private histogram(h: Histogram): Record<string, unknown> {
    const w = h.interval;
    const bounds = this.options.buckets.of(h.name);
    const counts = cumulativeCounts(w?.bins ?? null, bounds);
    return {
      histogram: {
        sample_count: w?.count ?? 0,
        sample_sum: w?.sum ?? 0,
        bucket: bounds.map((upper_bound, i) => ({ upper_bound, cumulative_count: counts[i] })),
      },
    };
  }

  /** The families of one flush taken at `atMs` (epoch milliseconds): counters, gauges, then histograms. */
  families(snapshot: MetricSnapshot, atMs: number): MetricFamily[] {
    const { countersAsDeltas, summary, histogram } = this.options;
    const out: MetricFamily[] = [];
    for (const { counter, delta } of snapshot.counters) {
      const value = countersAsDeltas ? delta : counter.value;
      out.push(this.family(counter, METRIC_TYPE.COUNTER, { counter: { value } }, atMs));
    }
    for (const gauge of snapshot.gauges)
      out.push(this.family(gauge, METRIC_TYPE.GAUGE, { gauge: { value: gauge.value } }, atMs));
    for (const h of snapshot.histograms) {
      if (summary) out.push(this.family(h, METRIC_TYPE.SUMMARY, this.summary(h), atMs));
      if (histogram) out.push(this.family(h, METRIC_TYPE.HISTOGRAM, this.histogram(h), atMs));
    }
    return out;
  }
}
