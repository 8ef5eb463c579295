import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TagProducer } from '../../../src/stats/tags.js';
import { renderStats, statsData } from '../../../views/stats/index.js';
import { jsonStatsData } from '../../../views/stats/json.js';
import { parseStatsParams } from '../../../views/stats/params.js';
import { selectStats } from '../../../views/stats/select.js';
import { knownStore } from './fixture.js';

const render = (query: string) => renderStats(knownStore(), new TagProducer(), new URLSearchParams(query));
const zeros = Array.from({ length: 9 }, () => ({ interval: 0, cumulative: 0 }));

test('format=json: compact, readouts, counters and gauges, then one histograms element', () => {
  const out = render('format=json');
  assert.equal(out.contentType, 'application/json');
  const q = [1, 1.025, 1.05, 1.075, 1.09, 1.095, 1.099, 1.0999, 1.1].map((c) => ({
    interval: null,
    cumulative: c,
  }));
  const expected = {
    stats: [
      { name: 'server.name', value: 'a<b' },
      { name: 'a.unused', value: 0 },
      { name: 'cluster.foo.upstream_cx_active', value: 1 },
      { name: 'cluster.foo.upstream_rq_200', value: 3 },
      { name: 'http.ingress_http.downstream_rq_2xx', value: 2 },
      { name: 'server.live', value: 0 },
      {
        histograms: {
          supported_quantiles: [0, 25, 50, 75, 90, 95, 99, 99.9, 100],
          computed_quantiles: [
            { name: 'cluster.foo.upstream_rq_time', values: zeros },
            { name: 'http.admin.downstream_rq_time', values: q },
          ],
        },
      },
    ],
  };
  assert.equal(out.body, JSON.stringify(expected));
});

test('format=json: interval values once a flush closed an interval with samples', () => {
  const store = knownStore();
  store.histogram('http.admin.downstream_rq_time').record(1);
  store.flush();
  const body = JSON.parse(
    renderStats(store, new TagProducer(), new URLSearchParams('format=json&filter=admin')).body,
  );
  const values = body.stats[0].histograms.computed_quantiles[0].values;
  assert.deepEqual(values[0], { interval: 1, cumulative: 1 });
  assert.deepEqual(values[8], { interval: 1.1, cumulative: 1.1 });
});

test('format=json with usedonly, filter and no match', () => {
  assert.equal(render('format=json&filter=nomatch').body, '{"stats":[]}');
  const used = JSON.parse(render('format=json&usedonly&type=Histograms').body);
  assert.deepEqual(
    used.stats[0].histograms.computed_quantiles.map((h: { name: string }) => h.name),
    ['http.admin.downstream_rq_time'],
  );
});

test('format=json with histogram_buckets: an array of {name, buckets}', () => {
  const body = JSON.parse(render('format=json&type=Histograms&usedonly&histogram_buckets=cumulative').body);
  const [h] = body.stats[0].histograms;
  assert.equal(h.name, 'http.admin.downstream_rq_time');
  assert.equal(h.buckets.length, 19);
  assert.deepEqual(h.buckets[0], { upper_bound: 0.5, interval: 0, cumulative: 0 });
  assert.deepEqual(h.buckets[1], { upper_bound: 1, interval: 0, cumulative: 1 });
  assert.deepEqual(h.buckets[18], { upper_bound: 3600000, interval: 0, cumulative: 1 });
  const disjoint = JSON.parse(render('format=json&type=Histograms&usedonly&histogram_buckets=disjoint').body);
  assert.deepEqual(disjoint.stats[0].histograms[0].buckets[2], {
    upper_bound: 5,
    interval: 0,
    cumulative: 0,
  });
});

test('the data form (the debug bundle reads) is what the JSON text parses to, in every histogram mode', () => {
  assert.deepEqual(statsData(knownStore()), JSON.parse(render('format=json').body));
  for (const mode of ['cumulative', 'disjoint', 'summary']) {
    const query = new URLSearchParams(`format=json&histogram_buckets=${mode}`);
    const parsed = parseStatsParams(query);
    assert.ok(parsed.ok);
    const store = knownStore();
    assert.deepEqual(
      jsonStatsData(selectStats(store, parsed.params), parsed.params),
      JSON.parse(render(query.toString()).body),
      mode,
    );
  }
});
