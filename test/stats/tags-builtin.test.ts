import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TagProducer } from '../../src/stats/tags.js';

// The built-in extractors place group 1 by its text in the whole match; these names put that
// text twice in the match (`r.` in `cluster.r.`), where only the match indices can tell.
test('built-in extractors remove the right span when the tag text repeats in the match', () => {
  const tags = new TagProducer();
  const cases: Array<[string, string, Array<[string, string]>]> = [
    [
      'cluster.r.upstream_rq_200',
      'cluster.upstream_rq',
      [
        ['proxy.response_code', '200'],
        ['proxy.cluster_name', 'r'],
      ],
    ],
    [
      'cluster.c.upstream_rq_5xx',
      'cluster.upstream_rq_xx',
      [
        ['proxy.response_code_class', '5'],
        ['proxy.cluster_name', 'c'],
      ],
    ],
    [
      'cluster.service_1.upstream_cx_total',
      'cluster.upstream_cx_total',
      [['proxy.cluster_name', 'service_1']],
    ],
    ['http.h.rq_200', 'http.rq_200', [['proxy.http_conn_manager_prefix', 'h']]],
    [
      'listener.127.0.0.1_80.downstream_cx_total',
      'listener.downstream_cx_total',
      [['proxy.listener_address', '127.0.0.1_80']],
    ],
  ];
  for (const [name, extracted, expected] of cases) {
    const e = tags.extract(name);
    assert.equal(e.name, extracted, name);
    assert.deepEqual(
      e.tags.map((t) => [t.name, t.value]),
      expected,
      name,
    );
  }
});
