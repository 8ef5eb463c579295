import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { TagProducer } from '../../../src/stats/tags.js';
import { renderStats, streamStats } from '../../../views/stats/index.js';
import { knownStore } from './fixture.js';

const render = (query: string, tags = new TagProducer()) =>
  renderStats(knownStore(), tags, new URLSearchParams(query), 'prometheus');

const bucketLines = (name: string, labels: string, counts: number[]) => {
  const bounds = [
    0.5, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000, 600000, 1800000,
    3600000,
  ];
  const sep = labels ? ',' : '';
  return bounds.map((b, i) => `${name}_bucket{${labels}${sep}le="${b}"} ${counts[i]}`);
};

test('prometheus: counters, gauges, histograms; tags as labels; one # TYPE per metric', () => {
  const out = render('');
  assert.equal(out.status, 200);
  const expected = [
    '# TYPE proxy_a_unused counter',
    'proxy_a_unused{} 0',
    '',
    '# TYPE proxy_cluster_upstream_rq counter',
    'proxy_cluster_upstream_rq{proxy_response_code="200",proxy_cluster_name="foo"} 3',
    '',
    '# TYPE proxy_http_downstream_rq_xx counter',
    'proxy_http_downstream_rq_xx{proxy_response_code_class="2",proxy_http_conn_manager_prefix="ingress_http"} 2',
    '',
    '# TYPE proxy_cluster_upstream_cx_active gauge',
    'proxy_cluster_upstream_cx_active{proxy_cluster_name="foo"} 1',
    '',
    '# TYPE proxy_server_live gauge',
    'proxy_server_live{} 0',
    '',
    '# TYPE proxy_cluster_upstream_rq_time histogram',
    ...bucketLines('proxy_cluster_upstream_rq_time', 'proxy_cluster_name="foo"', new Array(19).fill(0)),
    'proxy_cluster_upstream_rq_time_bucket{proxy_cluster_name="foo",le="+Inf"} 0',
    'proxy_cluster_upstream_rq_time_sum{proxy_cluster_name="foo"} 0',
    'proxy_cluster_upstream_rq_time_count{proxy_cluster_name="foo"} 0',
    '',
    '# TYPE proxy_http_downstream_rq_time histogram',
    ...bucketLines('proxy_http_downstream_rq_time', 'proxy_http_conn_manager_prefix="admin"', [
      0,
      ...new Array(18).fill(1),
    ]),
    'proxy_http_downstream_rq_time_bucket{proxy_http_conn_manager_prefix="admin",le="+Inf"} 1',
    'proxy_http_downstream_rq_time_sum{proxy_http_conn_manager_prefix="admin"} 1',
    'proxy_http_downstream_rq_time_count{proxy_http_conn_manager_prefix="admin"} 1',
    '',
    '',
  ].join('\n');
  assert.equal(out.body, expected);
});

test('prometheus: usedonly, filter on the stat name, text_readouts', () => {
  assert.doesNotMatch(render('usedonly').body, /proxy_a_unused|proxy_server_live/);
  // the filter applies to the stat name, not the Prometheus name
  assert.match(
    render('filter=^cluster\\.foo\\.upstream_rq_200$').body,
    /^# TYPE proxy_cluster_upstream_rq counter\n/,
  );
  assert.equal(render('filter=proxy_').body, '');
  assert.doesNotMatch(render('').body, /text_value/);
  assert.match(
    render('text_readouts&type=TextReadouts').body,
    /^# TYPE proxy_server_name gauge\nproxy_server_name\{text_value="a<b"\} 0\n/,
  );
});

test('prometheus: --stats-tag and stats_config tags become labels; names unchanged elsewhere', () => {
  const tags = new TagProducer(
    {
      stats_tags: [
        { tag_name: 'env', fixed_value: 'prod' },
        { tag_name: 'shard', regex: '^server\\.((.*?)\\.)' },
      ],
    },
    [{ name: 'zone', value: 'z1' }],
  );
  const store = knownStore();
  store.gauge('server.s1.load').set(5);
  const body = renderStats(store, tags, new URLSearchParams('filter=load'), 'prometheus').body;
  assert.equal(
    body,
    '# TYPE proxy_server_load gauge\nproxy_server_load{zone="z1",env="prod",shard="s1"} 5\n\n',
  );
  assert.equal(renderStats(store, tags, new URLSearchParams('filter=load')).body, 'server.s1.load: 5\n');
});

test('prometheus output passes promtool check metrics', (t) => {
  if (!existsSync('/usr/bin/promtool')) {
    t.skip('promtool is absent (CI installs it with the prometheus Debian package)');
    return;
  }
  const store = knownStore();
  store.textReadout('server.odd').set('quote " backslash \\ newline \n');
  for (const v of [0, 3, 70, 1200])
    store.histogram('listener.127.0.0.1_80.downstream_cx_length_ms').record(v);
  const body = renderStats(store, new TagProducer(), new URLSearchParams('text_readouts'), 'prometheus').body;
  const run = spawnSync('promtool', ['check', 'metrics'], { input: body, encoding: 'utf8' });
  // 3 = naming lint only (counters without _total, as the reference names them); 1 = unparsable
  assert.ok(run.status === 0 || run.status === 3, `promtool exit ${run.status}: ${run.stderr}${run.stdout}`);
  assert.doesNotMatch(run.stderr + run.stdout, /error while linting|parsing error/);
});

test('prometheus names=envoy: the reference names and labels, other tags unchanged, bad names 400', () => {
  const tags = new TagProducer({ stats_tags: [{ tag_name: 'env', fixed_value: 'prod' }] }, [
    { name: 'zone', value: 'z1' },
  ]);
  const store = knownStore();
  const envoy = renderStats(
    store,
    tags,
    new URLSearchParams('names=envoy&filter=^cluster\\.foo\\.upstream_rq_200$'),
    'prometheus',
  );
  assert.equal(
    envoy.body,
    '# TYPE envoy_cluster_upstream_rq counter\nenvoy_cluster_upstream_rq{zone="z1",env="prod",envoy_response_code="200",envoy_cluster_name="foo"} 3\n\n',
  );
  // the same stats rendered under the other names, then again: each stat's cached name follows the names asked for
  const proxy = renderStats(
    store,
    tags,
    new URLSearchParams('filter=^cluster\\.foo\\.upstream_rq_200$'),
    'prometheus',
  );
  assert.match(
    proxy.body,
    /^proxy_cluster_upstream_rq\{zone="z1",env="prod",proxy_response_code="200",proxy_cluster_name="foo"\} 3$/m,
  );
  assert.equal(
    renderStats(
      store,
      tags,
      new URLSearchParams('names=envoy&filter=^cluster\\.foo\\.upstream_rq_200$'),
      'prometheus',
    ).body,
    envoy.body,
  );
  const bad = renderStats(store, tags, new URLSearchParams('names=statsd'), 'prometheus');
  assert.equal(bad.status, 400);
  assert.equal(bad.body, 'usage: /stats/prometheus?names=(proxy|envoy)\n\n');
});

test('prometheus: the server default names apply when the query has none', () => {
  const out = streamStats(
    knownStore(),
    new TagProducer(),
    new URLSearchParams('filter=upstream_cx_active'),
    'prometheus',
    'envoy',
  );
  const body = [...(out.body as Iterable<string>)].join('');
  assert.equal(
    body,
    '# TYPE envoy_cluster_upstream_cx_active gauge\nenvoy_cluster_upstream_cx_active{envoy_cluster_name="foo"} 1\n\n',
  );
});
