/**
 * Root cause of the regression this guards: `validate_clusters` was advisory, so a route
 * naming a missing cluster validated ("configuration OK") and then answered 503 with no log
 * line. The reference defaults it to true for inline route tables and refuses to load them.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Report } from '../../src/bootstrap/report.js';
import { checkRouteClusters } from '../../src/config/route-clusters.js';
import { bootstrapOf, errorsOf, loadYaml } from '../helpers/bootstrap.js';
import { runProxy } from '../helpers/cli.js';

const ENDPOINTS = `load_assignment: { cluster_name: web, endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: 127.0.0.1, port_value: 1 } } } }] }] }`;

function bootstrap(routeConfig: string): string {
  return `static_resources: { clusters: [{ name: web, connect_timeout: 1s, ${ENDPOINTS} }], listeners: [{ name: l, address: { socket_address: { address: 127.0.0.1, port_value: 0 } }, filter_chains: [{ filters: [{ name: envoy.http_connection_manager, typed_config: { "@type": type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager, stat_prefix: s, http_filters: [{ name: envoy.router }], route_config: { ${routeConfig} } } }] }] }] }`;
}

const routes = (route: string) =>
  `virtual_hosts: [{ name: v, domains: ['*'], routes: [{ match: { prefix: /a }, route: { cluster: web } }, { match: { prefix: / }, route: ${route} }] }]`;

const AT =
  'static_resources.listeners[0].filter_chains[0].filters[0].typed_config.route_config.virtual_hosts[0].routes[1].route';

describe('validate_clusters of an inline route table', () => {
  it('is on by default: a route to a missing cluster fails with the route field path', () => {
    const errors = errorsOf(loadYaml(bootstrap(routes('{ cluster: missing }'))));
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.ok(
      errors[0]?.includes(`${AT}.cluster: route: cluster 'missing' is not a known cluster`),
      errors.join('\n'),
    );
  });

  it('checks weighted clusters too', () => {
    const errors = errorsOf(
      loadYaml(
        bootstrap(
          routes(
            '{ weighted_clusters: { clusters: [{ name: web, weight: 50 }, { name: gone, weight: 50 }] } }',
          ),
        ),
      ),
    );
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.ok(
      errors[0]?.includes(`${AT}.weighted_clusters.clusters[1].name: route: weighted cluster 'gone'`),
      errors.join('\n'),
    );
  });

  it('validate_clusters: false loads the table (the route answers 503 at request time)', () => {
    bootstrapOf(loadYaml(bootstrap(`validate_clusters: false, ${routes('{ cluster: missing }')}`)));
  });

  it('fails --mode validate with exit 1', async () => {
    const run = await runProxy([
      '--mode',
      'validate',
      '--config-yaml',
      bootstrap(routes('{ cluster: missing }')),
    ]);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /routes\[1\]\.route\.cluster: route: cluster 'missing' is not a known cluster/);
    assert.equal(run.stdout, '');
  });
});

describe('checkRouteClusters of a discovered route table', () => {
  const table = { virtual_hosts: [{ name: 'v', routes: [{ route: { cluster: 'missing' } }] }] };

  it('is off by default (RDS), on when the table sets it', () => {
    const off = new Report('rds');
    checkRouteClusters(table, '', off, new Set(['web']), false);
    assert.deepEqual(off.errors, []);
    const on = new Report('rds');
    checkRouteClusters({ ...table, validate_clusters: true }, '', on, new Set(['web']), false);
    assert.equal(on.errors.length, 1);
    assert.match(
      on.errors[0] ?? '',
      /virtual_hosts\[0\]\.routes\[0\]\.route\.cluster: route: cluster 'missing'/,
    );
  });

  it('passes a route to a known cluster', () => {
    const report = new Report('rds');
    checkRouteClusters({ ...table, validate_clusters: true }, '', report, new Set(['missing']), false);
    assert.deepEqual(report.errors, []);
  });
});
