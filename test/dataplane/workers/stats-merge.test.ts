import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dumpStats, mergeHostStats, mergeStats } from '../../../src/dataplane/workers/stats-merge.js';
import { RecentLookups } from '../../../src/stats/recent-lookups.js';
import { StatsStore } from '../../../src/stats/store.js';

const host = {
  cx_total: 1,
  cx_active: 1,
  cx_connect_fail: 0,
  rq_total: 2,
  rq_timeout: 0,
  rq_success: 2,
  rq_error: 0,
  rq_active: 0,
};

test('worker stats merge: counters and accumulating gauges add up, shared-state gauges do not, histograms pool', () => {
  const primary = new StatsStore();
  primary.gauge('listener_manager.total_listeners_active', 'NeverImport').set(2);
  const workers = [3, 4].map((n) => {
    const s = new StatsStore();
    s.counter('tcp.p.downstream_cx_total').add(n);
    s.gauge('server.total_connections').set(n);
    s.gauge('listener_manager.total_listeners_active', 'NeverImport').set(7);
    s.histogram('listener.127.0.0.1_0.downstream_cx_length_ms').record(n);
    return dumpStats(s, { c: { '127.0.0.1:1': host } });
  });
  const wire = workers.map((d) => JSON.parse(JSON.stringify(d)));
  const merged = mergeStats(primary, wire);
  assert.equal(merged.counter('tcp.p.downstream_cx_total').value, 7);
  assert.equal(merged.gauge('server.total_connections').value, 7);
  assert.equal(merged.gauge('listener_manager.total_listeners_active').value, 2);
  assert.equal(
    merged.histograms.get('listener.127.0.0.1_0.downstream_cx_length_ms')?.cumulativeWindow()?.count,
    2,
  );
  assert.deepEqual(mergeHostStats(wire).c?.['127.0.0.1:1']?.rq_total, 4);
  // Rendering the merge must not touch the live stores.
  assert.equal(primary.counters.has('tcp.p.downstream_cx_total'), false);
});

test('worker stats merge: recent lookups add up, in the list and in server.stats_recent_lookups', () => {
  const primary = new StatsStore();
  primary.recentLookups.enable();
  primary.gauge('server.stats_recent_lookups', 'NeverImport').set(primary.recentLookups.total);
  const workers = [1, 2].map((n) => {
    const s = new StatsStore();
    s.recentLookups.enable();
    for (let i = 0; i < n; i++) s.counter('cluster.c.upstream_cx_total');
    s.counter(`cluster.c.only_in_${n}`);
    return s;
  });
  const wire = workers.map((w) => JSON.parse(JSON.stringify(dumpStats(w, {}))));
  const merged = mergeStats(primary, wire);
  // The primary looked one name up; the workers 2 and 3.
  assert.equal(merged.gauges.get('server.stats_recent_lookups')?.value, 6);

  const lookups = new RecentLookups();
  lookups.absorb(primary.recentLookups.dump());
  for (const w of workers) lookups.absorb(JSON.parse(JSON.stringify(w.recentLookups.dump())));
  assert.equal(lookups.total, 6);
  assert.equal(lookups.capacity, 100);
  assert.deepEqual(lookups.entries(), [
    ['cluster.c.only_in_1', 1],
    ['cluster.c.only_in_2', 1],
    ['server.stats_recent_lookups', 1],
    ['cluster.c.upstream_cx_total', 3],
  ]);
});

test('worker stats merge into a kept store: the figures of a fresh merge, on the same stat objects', () => {
  const primary = new StatsStore();
  primary.gauge('listener_manager.total_listeners_active', 'NeverImport').set(2);
  primary.textReadout('server.version').set('p');
  const worker = new StatsStore();
  const dumpOf = (n: number) => {
    worker.counter('tcp.p.downstream_cx_total').add(n);
    worker.gauge('server.total_connections').set(n);
    worker.gauge('listener_manager.total_listeners_active', 'NeverImport').set(7);
    worker.histogram('h').record(n);
    worker.textReadout('server.version').set('w');
    return JSON.parse(JSON.stringify(dumpStats(worker, {})));
  };
  const kept = mergeStats(primary, [dumpOf(3)]);
  const counter = kept.counters.get('tcp.p.downstream_cx_total');
  const generation = kept.generation;
  const wire = [dumpOf(4)];
  const again = mergeStats(primary, wire, kept);
  const fresh = mergeStats(primary, wire);
  assert.equal(again, kept);
  assert.equal(again.counters.get('tcp.p.downstream_cx_total'), counter, 'the same stat object');
  assert.equal(again.generation, generation, 'no stat created, so sorted names stay cached');
  const figures = (s: StatsStore) => ({
    counters: [...s.counters.values()].map((c) => [c.name, c.value, c.resetBase, c.used]),
    gauges: [...s.gauges.values()].map((g) => [g.name, g.value, g.used]),
    histograms: [...s.histograms.values()].map((h) => [h.name, h.cumulativeWindow()?.count, h.used]),
    textReadouts: [...s.textReadouts.values()].map((t) => [t.name, t.value]),
  });
  assert.deepEqual(figures(again), figures(fresh));
  assert.equal(again.counters.get('tcp.p.downstream_cx_total')?.value, 7);
  assert.equal(again.gauges.get('listener_manager.total_listeners_active')?.value, 2);
  assert.equal(again.textReadouts.get('server.version')?.value, 'p');
});
