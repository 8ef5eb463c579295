import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MergedStats } from '../../src/dataplane/workers/merged-stats.js';
import { StatsTracker } from '../../src/dataplane/workers/stats-delta.js';
import { StatsStore } from '../../src/stats/store.js';
import { TagProducer } from '../../src/stats/tags.js';
import { renderStats } from '../../views/stats/index.js';

/** A store as start-up leaves it: deltas of zero added, gauges set, nothing counted yet. */
function startedStore(): StatsStore {
  const s = new StatsStore();
  s.counter('cluster_manager.cluster_updated_via_merge').add(0);
  s.counter('server.static_unknown_fields').add(0);
  s.counter('tcp.echo.downstream_cx_total');
  s.gauge('server.total_connections').add(0);
  s.gauge('server.total_connections').sub(0);
  s.gauge('listener_manager.total_listeners_draining', 'NeverImport').set(0);
  s.histogram('tcp.echo.downstream_cx_length_ms');
  return s;
}

const names = (store: StatsStore, query: string): string[] => {
  const body = renderStats(store, new TagProducer(), new URLSearchParams(query)).body as string;
  if (query.includes('format=json'))
    return (JSON.parse(body).stats as Array<{ name?: string; histograms?: unknown }>)
      .filter((s) => s.name !== undefined)
      .map((s) => s.name as string);
  if (query.includes('format=prometheus'))
    return body
      .split('\n')
      .filter((l) => l.startsWith('# TYPE '))
      .map((l) => l.split(' ')[2] as string);
  return body
    .split('\n')
    .filter(Boolean)
    .map((l) => l.slice(0, l.indexOf(':')));
};

test('usedonly: adding zero is not a use, a set is (as in the reference), in text, JSON and Prometheus', () => {
  const s = startedStore();
  assert.deepEqual(names(s, 'usedonly'), ['listener_manager.total_listeners_draining']);
  assert.deepEqual(names(s, 'usedonly&format=json'), ['listener_manager.total_listeners_draining']);
  assert.deepEqual(names(s, 'usedonly&format=prometheus'), [
    'proxy_listener_manager_total_listeners_draining',
  ]);
  // Without usedonly every stat is there.
  assert.equal(names(s, '').length, 6);
  s.counter('tcp.echo.downstream_cx_total').inc();
  s.counter('server.static_unknown_fields').add(2);
  s.gauge('server.total_connections').add(1);
  assert.deepEqual(names(s, 'usedonly'), [
    'listener_manager.total_listeners_draining',
    'server.static_unknown_fields',
    'server.total_connections',
    'tcp.echo.downstream_cx_total',
  ]);
});

/** The primary's and the workers' stores merged as `/stats` does, through the IPC encoding. */
async function merge(primary: StatsStore, workers: StatsStore[]): Promise<StatsStore> {
  const merged = new MergedStats();
  const noPause = async () => {};
  await merged.apply(0, await new StatsTracker(primary).dump(null, noPause), noPause);
  for (const [i, w] of workers.entries())
    await merged.apply(
      i + 1,
      JSON.parse(JSON.stringify(await new StatsTracker(w).dump(null, noPause))),
      noPause,
    );
  return merged.store;
}

test('usedonly over merged worker stats: a stat is used when any process used it, and only then', async () => {
  const primary = startedStore();
  const quiet = startedStore();
  const busy = startedStore();
  busy.counter('tcp.echo.downstream_cx_total').add(3);
  busy.histogram('tcp.echo.downstream_cx_length_ms').record(4);
  const merged = await merge(primary, [quiet, busy]);
  assert.match(
    renderStats(merged, new TagProducer(), new URLSearchParams('usedonly')).body as string,
    /^tcp\.echo\.downstream_cx_total: 3$/m,
  );
  assert.deepEqual(names(merged, 'usedonly&type=Counters'), ['tcp.echo.downstream_cx_total']);
  const onlyQuiet = await merge(primary, [quiet]);
  assert.deepEqual(names(onlyQuiet, 'usedonly&type=Counters'), []);
  assert.doesNotMatch(
    renderStats(onlyQuiet, new TagProducer(), new URLSearchParams('usedonly&type=Histograms')).body as string,
    /downstream_cx_length_ms/,
  );
});
