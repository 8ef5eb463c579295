/**
 * The metric families of a flush, as the reference's metrics service sink builds them: one
 * family per stat, counters as totals or deltas, a used histogram's interval as a summary and
 * a histogram with the default buckets (empty ones too: a used histogram that took no sample).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_BUCKETS } from '../../../src/stats/bins.js';
import { DEFAULT_HISTOGRAM_BUCKETS } from '../../../src/stats/buckets.js';
import { FamilyMaker, METRIC_TYPE } from '../../../src/stats/sinks/metric-families.js';
import { FlushLatch } from '../../../src/stats/sinks/snapshot.js';
import { StatsStore } from '../../../src/stats/store.js';
import { TagProducer } from '../../../src/stats/tags.js';

const options = {
  countersAsDeltas: false,
  tags: null,
  summary: true,
  histogram: true,
  buckets: DEFAULT_HISTOGRAM_BUCKETS,
};

describe('metric families', () => {
  it('counters as totals or deltas, gauges, a histogram with cumulative default buckets', () => {
    const stats = new StatsStore();
    const latch = new FlushLatch();
    const totals = new FamilyMaker(options);
    const deltas = new FamilyMaker({ ...options, countersAsDeltas: true });
    const rq = stats.counter('cluster.web.upstream_rq_total');
    const h = stats.histogram('cluster.web.upstream_rq_time');
    rq.add(3);
    stats.gauge('server.live').set(1);
    for (const v of [0.4, 3, 3, 700]) h.record(v);
    stats.flush();
    let snapshot = latch.snapshot(stats);
    const first = totals.families(snapshot, 1000);
    assert.deepEqual(first[0], {
      name: 'cluster.web.upstream_rq_total',
      type: METRIC_TYPE.COUNTER,
      metric: [{ label: [], timestamp_ms: 1000, counter: { value: 3 } }],
    });
    assert.deepEqual(first[1]?.metric[0]?.gauge, { value: 1 });
    const histogram = first.find((f) => f.type === METRIC_TYPE.HISTOGRAM)?.metric[0]?.histogram as {
      sample_count: number;
      bucket: Array<{ upper_bound: number; cumulative_count: number }>;
    };
    assert.equal(histogram.sample_count, 4);
    assert.deepEqual(
      histogram.bucket.map((b) => b.upper_bound),
      [...DEFAULT_BUCKETS],
    );
    // 0.5: one; 5: three; 1000: all four
    assert.deepEqual(
      histogram.bucket.slice(0, 3).map((b) => b.cumulative_count),
      [1, 1, 3],
    );
    assert.equal(histogram.bucket[9]?.cumulative_count, 4);

    rq.add(2);
    stats.flush();
    snapshot = latch.snapshot(stats);
    assert.deepEqual(totals.families(snapshot, 2000)[0]?.metric[0]?.counter, { value: 5 });
    assert.deepEqual(deltas.families(snapshot, 2000)[0]?.metric[0]?.counter, { value: 2 });
    // the histogram took nothing this interval: still sent, empty, its quantiles NaN
    const summary = totals.families(snapshot, 2000).find((f) => f.type === METRIC_TYPE.SUMMARY)?.metric[0]
      ?.summary as { sample_count: number; quantile: Array<{ value: number }> };
    assert.equal(summary.sample_count, 0);
    assert.ok(summary.quantile.every((q) => Number.isNaN(q.value)));
  });

  it('tags as labels under the reference names', () => {
    const stats = new StatsStore();
    stats.counter('cluster.web.upstream_rq_503').inc();
    const families = new FamilyMaker({ ...options, tags: new TagProducer() }).families(
      new FlushLatch().snapshot(stats),
      0,
    );
    assert.equal(families[0]?.name, 'cluster.upstream_rq');
    assert.deepEqual(families[0]?.metric[0]?.label, [
      { name: 'envoy.response_code', value: '503' },
      { name: 'envoy.cluster_name', value: 'web' },
    ]);
  });
});
