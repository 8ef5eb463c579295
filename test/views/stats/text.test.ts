import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TagProducer } from '../../../src/stats/tags.js';
import { renderStats } from '../../../views/stats/index.js';
import { knownStore } from './fixture.js';

const render = (query: string) => renderStats(knownStore(), new TagProducer(), new URLSearchParams(query));

test('plain text: readouts, counters and gauges merged by name, then histograms', () => {
  const out = render('');
  assert.equal(out.status, 200);
  assert.equal(out.contentType, 'text/plain; charset=UTF-8');
  assert.equal(
    out.body,
    [
      'server.name: "a&lt;b"',
      'a.unused: 0',
      'cluster.foo.upstream_cx_active: 1',
      'cluster.foo.upstream_rq_200: 3',
      'http.ingress_http.downstream_rq_2xx: 2',
      'server.live: 0',
      'cluster.foo.upstream_rq_time: No recorded values',
      'http.admin.downstream_rq_time: P0(nan,1) P25(nan,1.025) P50(nan,1.05) P75(nan,1.075) P90(nan,1.09) ' +
        'P95(nan,1.095) P99(nan,1.099) P99.5(nan,1.0995) P99.9(nan,1.0999) P100(nan,1.1)',
      '',
    ].join('\n'),
  );
});

test('usedonly drops stats never written', () => {
  const body = render('usedonly').body;
  assert.doesNotMatch(body, /a\.unused|server\.live|upstream_rq_time/);
  assert.match(body, /^cluster\.foo\.upstream_rq_200: 3$/m);
  assert.match(body, /^http\.admin\.downstream_rq_time: P0/m);
});

test('filter is a partial RE2 match unless anchored, and combines with usedonly', () => {
  assert.equal(render('filter=foo').body.split('\n').filter(Boolean).length, 3);
  assert.equal(render('filter=^foo').body, '');
  assert.equal(render('filter=rq_time$&usedonly').body.split('\n').filter(Boolean).length, 1);
  assert.equal(render('filter=^server\\.live$').body, 'server.live: 0\n');
  // RE2-only syntax still filters (through the RE2 engine)
  assert.equal(render('filter=(?i)SERVER\\.LIVE').body, 'server.live: 0\n');
});

test('type keeps one kind of stat', () => {
  assert.equal(render('type=Gauges').body, 'cluster.foo.upstream_cx_active: 1\nserver.live: 0\n');
  assert.equal(render('type=TextReadouts').body, 'server.name: "a&lt;b"\n');
  assert.equal(render('type=Counters&usedonly').body.split('\n').filter(Boolean).length, 2);
  assert.match(render('type=Histograms').body, /^cluster\.foo\.upstream_rq_time: No recorded values\n/);
});

test('histogram_buckets=cumulative and disjoint print B<bound>(interval,cumulative)', () => {
  const store = knownStore();
  const h = store.histogram('h');
  for (const v of [1, 7, 7, 700]) h.record(v);
  const q = (mode: string) =>
    renderStats(store, new TagProducer(), new URLSearchParams(`filter=^h$&histogram_buckets=${mode}`)).body;
  const cumulative = q('cumulative');
  assert.match(cumulative, /^h: B0\.5\(0,0\) B1\(0,1\) B5\(0,1\) B10\(0,3\) B25\(0,3\) /);
  assert.match(cumulative, / B1000\(0,4\) .* B3600000\(0,4\)\n$/);
  const disjoint = q('disjoint');
  assert.match(disjoint, /^h: B0\.5\(0,0\) B1\(0,1\) B5\(0,0\) B10\(0,2\) B25\(0,0\) /);
  assert.match(disjoint, / B1000\(0,1\) B2500\(0,0\)/);
  store.flush();
  assert.match(q('cumulative'), /^h: B0\.5\(0,0\) B1\(1,1\) B5\(1,1\) B10\(3,3\)/);
  assert.match(
    renderStats(
      store,
      new TagProducer(),
      new URLSearchParams('filter=upstream_rq_time&histogram_buckets=disjoint'),
    ).body,
    /^cluster\.foo\.upstream_rq_time: No recorded values\n$/,
  );
});

test('bad parameters answer 400 with a usage line', () => {
  const cases: Array<[string, RegExp]> = [
    ['format=xml', /^usage: \/stats\?format=\(html\|active-html\|json\|prometheus\|text\)\n/],
    ['type=Foo', /^invalid &type= param\n/],
    ['histogram_buckets=detailed', /^usage: \/stats\?histogram_buckets=/],
    ['filter=(', /^Invalid re2 regex/],
    ['filter=(?=a)', /^Invalid re2 regex/],
    ['filter=(a)\\1', /^Invalid re2 regex/],
  ];
  for (const [query, expected] of cases) {
    const out = render(query);
    assert.equal(out.status, 400, query);
    assert.match(out.body, expected, query);
  }
});

test('reset counters: /stats shows zero while the absolute value stays for sinks', () => {
  const store = knownStore();
  store.resetCounters();
  const c = store.counter('cluster.foo.upstream_rq_200');
  assert.equal(c.value, 3);
  c.inc();
  const body = renderStats(store, new TagProducer(), new URLSearchParams('filter=upstream_rq_200')).body;
  assert.equal(body, 'cluster.foo.upstream_rq_200: 1\n');
  assert.equal(c.value, 4);
});
