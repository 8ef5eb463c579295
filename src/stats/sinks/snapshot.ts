import type { Counter, Gauge, Histogram, StatsStore } from '../store.js';

/**
 * What one flush hands every sink, as the reference's `MetricSnapshot`: the used counters
 * with what they counted since the last flush, the used gauges, and the used histograms (the
 * interval the flush closed is each one's `interval`, null when it took no sample). With workers it is read from the merged store, so a
 * worker's counts are in it once, summed with every other thread's.
 */
export interface MetricSnapshot {
  counters: Array<{ counter: Counter; delta: number }>;
  gauges: Gauge[];
  histograms: Histogram[];
}

/** A sink the stats edge flushes into and closes at shutdown. */
export interface StatsSink {
  flush(snapshot: MetricSnapshot): void;
  close(): void;
}

/**
 * The counters' values at the last flush, so each flush says what was counted since; one for
 * every sink, so they all see the same deltas. A counter `/reset_counters` re-based keeps its
 * absolute value here, as the reference's sinks see no reset.
 */
export class FlushLatch {
  private readonly last = new WeakMap<Counter, number>();

  snapshot(stats: StatsStore): MetricSnapshot {
    const counters: MetricSnapshot['counters'] = [];
    for (const counter of stats.counters.values()) {
      if (!counter.used) continue;
      const before = this.last.get(counter) ?? 0;
      this.last.set(counter, counter.value);
      // A merged total falls when a worker is gone: count from there, never backwards.
      counters.push({ counter, delta: Math.max(0, counter.value - before) });
    }
    const gauges: Gauge[] = [];
    for (const gauge of stats.gauges.values()) if (gauge.used) gauges.push(gauge);
    const histograms: Histogram[] = [];
    for (const histogram of stats.histograms.values()) if (histogram.used) histograms.push(histogram);
    return { counters, gauges, histograms };
  }
}
