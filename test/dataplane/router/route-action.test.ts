import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { JsonObject } from '../../../events/index.js';
import { compileRouteAction } from '../../../src/dataplane/router/route-action.js';
import { compiled, findingsOf } from '../../helpers/compile.js';

const action = (route: JsonObject) => compiled((report) => compileRouteAction(route, 'r', report));

test('a cluster, weighted clusters (weights as percentages by default), a direct response, a redirect', () => {
  assert.deepEqual(action({ route: { cluster: 'a' } }), { kind: 'cluster', cluster: 'a' });
  const weighted = action({
    route: {
      weighted_clusters: {
        clusters: [
          { name: 'a', weight: 30 },
          { name: 'b', weight: 70 },
        ],
      },
    },
  });
  assert.equal(weighted.kind, 'weighted');
  if (weighted.kind === 'weighted') {
    assert.equal(weighted.totalWeight, 100);
    assert.deepEqual(
      weighted.clusters.map((c) => [c.name, c.weight]),
      [
        ['a', 30],
        ['b', 70],
      ],
    );
  }
  assert.deepEqual(action({ direct_response: { status: 204 } }), { kind: 'direct', status: 204, body: null });
  const direct = action({ direct_response: { status: 200, body: { inline_string: 'hi' } } });
  assert.equal(direct.kind === 'direct' && direct.body?.toString(), 'hi');
  assert.deepEqual(action({ redirect: { https_redirect: true, response_code: 'PERMANENT_REDIRECT' } }), {
    kind: 'redirect',
    scheme: 'https',
    host: null,
    port: 0,
    path: null,
    prefixRewrite: null,
    status: 308,
    stripQuery: false,
  });
});

test('each malformed action is refused naming its field', () => {
  const cases: Array<[JsonObject, RegExp]> = [
    [{}, /^r: a route needs one of route, redirect, direct_response/],
    [{ route: {} }, /^r\.route: needs cluster or weighted_clusters/],
    [{ route: { cluster_header: 'x-cluster' } }, /^r\.route\.cluster_header: is not implemented/],
    [
      { route: { weighted_clusters: { clusters: [] } } },
      /^r\.route\.weighted_clusters\.clusters: needs at least one/,
    ],
    [
      { route: { weighted_clusters: { clusters: [{ weight: 100 }] } } },
      /^r\.route\.weighted_clusters\.clusters\[0\]\.name: required field missing/,
    ],
    [
      { route: { weighted_clusters: { clusters: [{ name: 'a', weight: 1 }], total_weight: 100 } } },
      /^r\.route\.weighted_clusters\.total_weight: is 100 but the cluster weights add up to 1/,
    ],
    [{ direct_response: { status: 99 } }, /^r\.direct_response\.status: 99 is not an HTTP status/],
    [
      { direct_response: { status: 200, body: { filename: '/etc/passwd' } } },
      /^r\.direct_response\.body\.filename: direct_response bodies from files are not supported/,
    ],
    [{ redirect: { host_redirect: 'a\r\nb' } }, /^r\.redirect\.host_redirect: .*CR, LF or NUL/],
  ];
  for (const [route, error] of cases) {
    const found = (() => {
      try {
        return findingsOf((report) => compileRouteAction(route, 'r', report)).join('\n');
      } catch (err) {
        return (err as Error).message;
      }
    })();
    assert.match(found, error, JSON.stringify(route));
  }
});
