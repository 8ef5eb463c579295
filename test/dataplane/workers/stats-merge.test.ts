import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { MergedStats } from '../../../src/dataplane/workers/merged-stats.js';
import { type StatsDelta, StatsTracker } from '../../../src/dataplane/workers/stats-delta.js';
import { mergeHostStats } from '../../../src/dataplane/workers/stats-merge.js';
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

const noPause = async () => {};
/** Through the IPC channel's encoding. */
const wire = (d: StatsDelta): StatsDelta => JSON.parse(JSON.stringify(d));

/** A fresh merge of full dumps: the primary as rank 0, the workers as 1, 2, ... */
async function mergeFresh(primary: StatsStore, workers: readonly StatsStore[]): Promise<StatsStore> {
  const merged = new MergedStats();
  await merged.apply(0, await new StatsTracker(primary).dump(null, noPause), noPause);
  for (const [i, w] of workers.entries())
    await merged.apply(i + 1, wire(await new StatsTracker(w).dump(null, noPause)), noPause);
  return merged.store;
}

/**
 * Every figure `/stats` can show, by name (sorted, so creation order does not matter); with
 * `like`, only the names `like` has (a name no process reports any more stays in a kept merge).
 */
function figures(s: StatsStore, like?: StatsStore) {
  const byName = <T extends { name: string }>(m: Map<string, T>, keep: Map<string, unknown> | undefined) =>
    [...m.values()].filter((x) => !keep || keep.has(x.name)).sort((a, b) => (a.name < b.name ? -1 : 1));
  return {
    counters: byName(s.counters, like?.counters).map((c) => [c.name, c.value, c.resetBase, c.used]),
    gauges: byName(s.gauges, like?.gauges).map((g) => [g.name, g.value, g.used]),
    histograms: byName(s.histograms, like?.histograms).map((h) => [
      h.name,
      h.used,
      h.interval && [[...h.interval.bins].sort((a, b) => a[0] - b[0]), h.interval.count, h.interval.sum],
      h.cumulativeWindow()?.count,
      [...(h.cumulativeWindow()?.bins ?? [])].sort((a, b) => a[0] - b[0]),
    ]),
    textReadouts: byName(s.textReadouts, like?.textReadouts).map((t) => [t.name, t.value, t.used]),
  };
}

test('worker stats merge: counters and accumulating gauges add up, shared-state gauges do not, histograms pool', async () => {
  const primary = new StatsStore();
  primary.gauge('listener_manager.total_listeners_active', 'NeverImport').set(2);
  const workers = [3, 4].map((n) => {
    const s = new StatsStore();
    s.counter('tcp.p.downstream_cx_total').add(n);
    s.gauge('server.total_connections').set(n);
    s.gauge('listener_manager.total_listeners_active', 'NeverImport').set(7);
    s.histogram('listener.127.0.0.1_0.downstream_cx_length_ms').record(n);
    return s;
  });
  const merged = await mergeFresh(primary, workers);
  assert.equal(merged.counters.get('tcp.p.downstream_cx_total')?.value, 7);
  assert.equal(merged.gauges.get('server.total_connections')?.value, 7);
  assert.equal(merged.gauges.get('listener_manager.total_listeners_active')?.value, 2);
  assert.equal(
    merged.histograms.get('listener.127.0.0.1_0.downstream_cx_length_ms')?.cumulativeWindow()?.count,
    2,
  );
  const hosts = [{ c: { '127.0.0.1:1': host } }, { c: { '127.0.0.1:1': host } }];
  assert.deepEqual(mergeHostStats(JSON.parse(JSON.stringify(hosts))).c?.['127.0.0.1:1']?.rq_total, 4);
  // Rendering the merge must not touch the live stores.
  assert.equal(primary.counters.has('tcp.p.downstream_cx_total'), false);
});

test('worker stats merge: recent lookups add up, in the list and in server.stats_recent_lookups', async () => {
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
  const merged = await mergeFresh(primary, workers);
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

test('worker stats deltas: only what moved is sent, onto the same stat objects, with no new generation', async () => {
  const primary = new StatsStore();
  primary.gauge('listener_manager.total_listeners_active', 'NeverImport').set(2);
  primary.textReadout('server.version').set('p');
  const worker = new StatsStore();
  for (let i = 0; i < 100; i++) worker.counter(`cluster.c${i}.upstream_rq_total`);
  const step = (n: number) => {
    worker.counter('tcp.p.downstream_cx_total').add(n);
    worker.gauge('server.total_connections').set(n);
    worker.gauge('listener_manager.total_listeners_active', 'NeverImport').set(7);
    worker.histogram('h').record(n);
    worker.textReadout('server.version').set('w');
  };
  const merged = new MergedStats();
  const own = new StatsTracker(primary);
  const tracker = new StatsTracker(worker);
  const round = async () => {
    const since = merged.since();
    await merged.apply(0, await own.dump(since[0], noPause), noPause);
    const delta = wire(await tracker.dump(since[1], noPause));
    await merged.apply(1, delta, noPause);
    return delta;
  };
  step(3);
  const first = await round();
  assert.equal(first.base, null, 'the first answer is a full dump');
  assert.equal(first.newCounters.length, 101);
  const kept = merged.store;
  const counter = kept.counters.get('tcp.p.downstream_cx_total');
  const generation = kept.generation;
  step(4);
  worker.flush();
  const delta = await round();
  assert.equal(delta.base, first.seq);
  assert.equal(delta.newCounters.length, 0);
  assert.deepEqual(delta.counters, [100, 7, 0, 1], 'only the counter that moved');
  assert.equal(delta.textReadouts.length, 0, 'an unchanged text readout is not sent');
  assert.equal(kept.counters.get('tcp.p.downstream_cx_total'), counter, 'the same stat object');
  assert.equal(kept.generation, generation, 'no stat created, so sorted names stay cached');
  assert.deepEqual(figures(kept), figures(await mergeFresh(primary, [worker])));
  assert.equal(kept.counters.get('tcp.p.downstream_cx_total')?.value, 7);
  assert.equal(kept.gauges.get('listener_manager.total_listeners_active')?.value, 2);
  assert.equal(kept.textReadouts.get('server.version')?.value, 'p');
  // Nothing moved: an empty delta.
  const idle = await round();
  assert.deepEqual([idle.counters, idle.gauges, idle.histograms], [[], [], []]);
});

test('worker stats deltas: reset_counters in every process shows every counter from zero', async () => {
  const primary = new StatsStore();
  const workers = [new StatsStore(), new StatsStore()];
  const merged = new MergedStats();
  const trackers = workers.map((w) => new StatsTracker(w));
  const own = new StatsTracker(primary);
  const round = async () => {
    const since = merged.since();
    await merged.apply(0, await own.dump(since[0], noPause), noPause);
    for (const [i, t] of trackers.entries())
      await merged.apply(i + 1, wire(await t.dump(since[i + 1], noPause)), noPause);
  };
  for (const [i, w] of workers.entries()) w.counter('cluster.a.upstream_rq_total').add(i + 5);
  await round();
  assert.equal(merged.store.counters.get('cluster.a.upstream_rq_total')?.shown, 11);
  for (const s of [primary, ...workers]) s.resetCounters();
  await round();
  assert.equal(merged.store.counters.get('cluster.a.upstream_rq_total')?.shown, 0);
  workers[1]?.counter('cluster.a.upstream_rq_total').inc();
  await round();
  assert.equal(merged.store.counters.get('cluster.a.upstream_rq_total')?.shown, 1);
  assert.equal(merged.store.counters.get('cluster.a.upstream_rq_total')?.value, 12);
});

/** One step of a process: a stat created or moved, a flush, or (for a worker) a restart. */
const op = fc.oneof(
  fc.record({
    kind: fc.constantFrom('counter', 'gauge', 'never', 'histogram', 'text'),
    name: fc.constantFrom('a', 'b', 'c', 'd', 'e'),
    value: fc.integer({ min: 0, max: 50 }),
  }),
  fc.constant({ kind: 'flush' as const }),
  fc.constant({ kind: 'reset' as const }),
  fc.constant({ kind: 'restart' as const }),
);

type Op = typeof op extends fc.Arbitrary<infer T> ? T : never;

function run(s: StatsStore, o: Op): void {
  switch (o.kind) {
    case 'counter':
      s.counter(`c.${o.name}`).add(o.value);
      return;
    case 'gauge':
      s.gauge(`g.${o.name}`).set(o.value);
      return;
    case 'never':
      s.gauge(`n.${o.name}`, 'NeverImport').set(o.value);
      return;
    case 'histogram':
      s.histogram(`h.${o.name}`).record(o.value);
      return;
    case 'text':
      s.textReadout(`t.${o.name}`).set(String(o.value));
      return;
    case 'flush':
      s.flush();
      return;
    case 'reset':
      s.resetCounters();
      return;
  }
}

test('worker stats deltas: the kept merge equals a fresh merge after every round, answers lost, duplicated or from a restarted worker (property)', async () => {
  const round = fc.record({
    ops: fc.array(fc.tuple(fc.integer({ min: 0, max: 2 }), op), { maxLength: 12 }),
    /** Per worker: answered, lost (the primary never applies it) or applied twice. */
    fate: fc.array(fc.constantFrom('ok', 'ok', 'lost', 'twice'), { minLength: 2, maxLength: 2 }),
  });
  await fc.assert(
    fc.asyncProperty(fc.array(round, { minLength: 1, maxLength: 8 }), async (rounds) => {
      const primary = new StatsStore();
      const workers = [new StatsStore(), new StatsStore()];
      const trackers = workers.map((w) => new StatsTracker(w));
      const own = new StatsTracker(primary);
      const merged = new MergedStats();
      // Several pause points, so the steps really interleave with the awaits.
      const pause = () => new Promise<void>((resolve) => setImmediate(resolve));
      for (const { ops, fate } of rounds) {
        for (const [who, o] of ops) {
          if (o.kind === 'restart') {
            if (who === 0) continue;
            workers[who - 1] = new StatsStore();
            trackers[who - 1] = new StatsTracker(workers[who - 1] as StatsStore);
            continue;
          }
          run(who === 0 ? primary : (workers[who - 1] as StatsStore), o);
        }
        const since = merged.since();
        await merged.apply(0, await own.dump(since[0], pause), pause);
        for (const [i, t] of trackers.entries()) {
          const delta = wire(await t.dump(since[i + 1], pause));
          if (fate[i] === 'lost') continue;
          await merged.apply(i + 1, delta, pause);
          if (fate[i] === 'twice') await merged.apply(i + 1, delta, pause);
        }
        // A lost answer leaves the figures that worker sent before: compare after a clean round.
        const clean = merged.since();
        await merged.apply(0, await own.dump(clean[0], pause), pause);
        for (const [i, t] of trackers.entries())
          await merged.apply(i + 1, wire(await t.dump(clean[i + 1], pause)), pause);
        const fresh = await mergeFresh(primary, workers);
        assert.deepEqual(figures(merged.store, fresh), figures(fresh));
        for (const c of merged.store.counters.values())
          if (!fresh.counters.has(c.name)) assert.deepEqual([c.value, c.resetBase, c.used], [0, 0, false]);
      }
    }),
    { seed: 17, numRuns: 150 },
  );
});

test('worker stats deltas: two dumps asked at once run one after the other; the stale one is full', async () => {
  const worker = new StatsStore();
  for (let i = 0; i < 10_000; i++) worker.counter(`cluster.c${i}.upstream_rq_total`).add(i);
  const tracker = new StatsTracker(worker);
  const merged = new MergedStats();
  const pause = () => new Promise<void>((resolve) => setImmediate(resolve));
  await merged.apply(1, wire(await tracker.dump(null, pause)), pause);
  worker.counter('cluster.c5.upstream_rq_total').inc();
  const since = merged.since()[1];
  const both = await Promise.all([tracker.dump(since, pause), tracker.dump(since, pause)]);
  assert.deepEqual(
    both.map((d) => [d.base, d.counters.length]),
    [
      [since?.seq, 4],
      // Every counter but c0, which is still at zero and unused, as a new one is on both sides.
      [null, 39_996],
    ],
  );
  for (const d of both) await merged.apply(1, wire(d), pause);
  assert.equal(merged.store.counters.get('cluster.c5.upstream_rq_total')?.value, 6);
  assert.deepEqual(figures(merged.store), figures(await mergeFresh(new StatsStore(), [worker])));
});
