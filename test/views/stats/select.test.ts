import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { StatsStore } from '../../../src/stats/store.js';
import { parseStatsParams } from '../../../views/stats/params.js';
import { selectStats, selectStatsStepwise } from '../../../views/stats/select.js';

const names = (list: Array<{ name: string }>) => list.map((s) => s.name);
const sorted = (list: string[]) => [...list].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

function paramsOf(query: string) {
  const parsed = parseStatsParams(new URLSearchParams(query));
  assert.ok(parsed.ok);
  return parsed.params;
}

// The sorted lists are kept between renders and the stats created since merged in; whatever
// the batches, a selection lists exactly what sorting every name afresh would.
test('stats created between renders are merged into the kept sorted lists as a fresh sort would place them', () => {
  const name = fc.stringMatching(/^[a-c_.]{0,3}[a-z0-9]{0,2}$/);
  const batch = fc.array(fc.tuple(fc.boolean(), name), { maxLength: 40 });
  fc.assert(
    fc.property(fc.array(batch, { minLength: 1, maxLength: 6 }), (batches) => {
      const store = new StatsStore();
      const all = paramsOf('');
      for (const b of batches) {
        for (const [counter, n] of b) counter ? store.counter(n) : store.gauge(n);
        const split = selectStats(store, all, true);
        assert.deepEqual(names(split.counters), sorted([...store.counters.keys()]));
        assert.deepEqual(names(split.gauges), sorted([...store.gauges.keys()]));
        // merged: by name, a counter before a gauge of the same name
        const merged = selectStats(store, all).countersAndGauges;
        const expected = [
          ...[...store.counters.keys()].map((n) => [n, 0] as const),
          ...[...store.gauges.keys()].map((n) => [n, 1] as const),
        ].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]));
        assert.deepEqual(
          merged.map((s) => [s.name, store.counters.get(s.name) === s ? 0 : 1]),
          expected,
        );
      }
    }),
    { seed: 41, numRuns: 300 },
  );
});

test('a selection of many names is made in pieces, and a render with no new stats reuses the sorted lists', () => {
  const store = new StatsStore();
  for (let i = 0; i < 40_000; i++) store.counter(`cluster.c${i % 997}.n${i}`);
  const steps = selectStatsStepwise(store, paramsOf(''), true);
  let pauses = 0;
  let step = steps.next();
  for (; !step.done; step = steps.next()) pauses += 1;
  // the first sort of 40,000 names gives the event loop turns (sorted runs, merge steps)
  assert.ok(pauses >= 4, `${pauses} pauses`);
  const first = step.value.counters;
  assert.deepEqual(names(first), sorted([...store.counters.keys()]));
  assert.equal(selectStats(store, paramsOf(''), true).counters, first, 'kept while nothing was created');
  store.counter('cluster.a.new');
  const next = selectStats(store, paramsOf(''), true).counters;
  assert.notEqual(next, first);
  assert.equal(next.length, first.length + 1);
  assert.equal(next[names(next).indexOf('cluster.a.new')]?.name, 'cluster.a.new');
  assert.deepEqual(names(next), sorted([...store.counters.keys()]));
});
