import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  countersReset,
  recentLookupsCleared,
  recentLookupsDisabled,
  recentLookupsEnabled,
} from '../../events/index.js';
import { renderRecentLookups } from '../../views/stats/recent-lookups.js';
import { statsContext } from '../helpers/stats-admin.js';

test('counter reset event re-bases counters; sinks keep the absolute value', async () => {
  const ctx = statsContext();
  ctx.statsRuntime.start();
  const c = ctx.stats.counter('cluster.a.upstream_rq_total');
  c.add(5);
  ctx.store.dispatch(countersReset({}), 'admin');
  assert.equal(c.shown, 0);
  assert.equal(c.value, 5);
  c.inc();
  assert.equal(c.shown, 1);
  await ctx.shutdown(0);
});

test('recent lookups follow the states table', async () => {
  const ctx = statsContext();
  ctx.statsRuntime.start();
  const lookups = ctx.stats.recentLookups;
  lookups.clear();
  ctx.stats.counter('x');
  assert.equal(
    renderRecentLookups(lookups).body,
    'Lookup tracking is not enabled. Use /stats/recentlookups/enable to enable.\n\ntotal: 1\n',
  );
  ctx.store.dispatch(recentLookupsEnabled({}), 'admin');
  ctx.stats.counter('b');
  ctx.stats.gauge('a');
  ctx.stats.counter('b');
  // The total is what the listed names count (issue 30: a total of lookups made before
  // tracking was enabled, with no name to show for them, told nothing): 3, not 4.
  assert.equal(renderRecentLookups(lookups).body, '   Count Lookup\n       1 a\n       2 b\n\ntotal: 3\n');
  // clear: list and count cleared, collection continues
  ctx.store.dispatch(recentLookupsCleared({}), 'admin');
  assert.equal(renderRecentLookups(lookups).body, '   Count Lookup\n\ntotal: 0\n');
  ctx.stats.counter('c');
  assert.equal(renderRecentLookups(lookups).body, '   Count Lookup\n       1 c\n\ntotal: 1\n');
  // disable: list cleared, total keeps accumulating
  ctx.store.dispatch(recentLookupsDisabled({}), 'admin');
  ctx.stats.counter('d');
  assert.equal(
    renderRecentLookups(lookups).body,
    'Lookup tracking is not enabled. Use /stats/recentlookups/enable to enable.\n\ntotal: 2\n',
  );
  // reset_counters clears lookups too
  ctx.store.dispatch(countersReset({}), 'admin');
  assert.equal(lookups.total, 0);
  await ctx.shutdown(0);
});

test('recent lookups keep the 100 most recent names', () => {
  const ctx = statsContext();
  ctx.stats.recentLookups.enable();
  for (let i = 0; i < 150; i++) ctx.stats.counter(`n${i}`);
  const names = ctx.stats.recentLookups.entries().map(([n]) => n);
  assert.equal(names.length, 100);
  assert.ok(!names.includes('n49') && names.includes('n50') && names.includes('n149'));
});

test('server stats come from snapshots and the process; flush on admin flushes per query', async () => {
  const ctx = statsContext(
    { stats_flush_on_admin: true, stats_server_version_override: '77' },
    {
      concurrency: 3,
      restartEpoch: 2,
    },
  );
  const runtime = ctx.statsRuntime.start();
  const g = (n: string) => ctx.stats.gauges.get(n)?.value;
  assert.equal(g('server.concurrency'), 3);
  assert.equal(g('server.hot_restart_epoch'), 2);
  assert.equal(g('server.version'), 77);
  assert.equal(g('server.state'), 3, 'INITIALIZING after the bootstrap loaded');
  const h = ctx.stats.histogram('x.time');
  h.record(4);
  assert.equal(h.interval, null);
  await runtime.forQuery();
  const closed = h.interval as { count: number } | null;
  assert.equal(closed?.count, 1, 'the query flushed');
  assert.ok((g('server.memory_physical_size') ?? 0) > 0);
  await ctx.shutdown(0);
});
