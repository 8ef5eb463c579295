/**
 * The version a bootstrap was written in, which `/config_dump` shows its resources in: the
 * loader keeps every bootstrap in its canonical v2 form, so before this the envoyproxy.io
 * quick start, pasted in v3, was dumped with v2 type URLs and `host_rewrite`.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { stringify } from 'yaml';
import { type LoadOptions, type LoadResult, loadBootstrap } from '../../src/bootstrap/load.js';
import { repoRoot } from '../helpers/cli.js';

const V3_HCM =
  'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';
const V2_HCM =
  'type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager';

const options = (more: { configPath?: string; configYaml?: string }): LoadOptions => ({
  configPath: '',
  configYaml: '',
  allowUnknownStaticFields: false,
  disableExtensions: [],
  ...more,
});

function apiVersionOf(result: LoadResult): string {
  assert.ok(result.ok, result.ok ? '' : result.errors.join('\n'));
  return result.apiVersion;
}

/** A listener whose HCM config is `typedConfig`, and a cluster with `cluster` merged in. */
function bootstrap(typedConfig: Record<string, unknown>, cluster: Record<string, unknown> = {}) {
  return {
    static_resources: {
      listeners: [
        {
          name: 'l',
          address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
          filter_chains: [
            {
              filters: [{ name: 'envoy.filters.network.http_connection_manager', typed_config: typedConfig }],
            },
          ],
        },
      ],
      clusters: [{ name: 'c', connect_timeout: '1s', load_assignment: { cluster_name: 'c' }, ...cluster }],
    },
  };
}

const HCM_FIELDS = {
  stat_prefix: 'in',
  route_config: {
    virtual_hosts: [
      { name: 'v', domains: ['*'], routes: [{ match: { prefix: '/' }, route: { cluster: 'c' } }] },
    ],
  },
  http_filters: [{ name: 'envoy.filters.http.router' }],
};
const hcm = (type: string) => ({ '@type': type, ...HCM_FIELDS });

const load = (config: unknown) => apiVersionOf(loadBootstrap(options({ configYaml: stringify(config) })));

describe('the API version a bootstrap came in', () => {
  it('is V3 for the envoyproxy.io quick start, pasted unchanged', () => {
    const demo = join(repoRoot, 'fixtures/real-world/envoy-demo.yaml');
    assert.equal(apiVersionOf(loadBootstrap(options({ configPath: demo }))), 'V3');
  });

  it('is V2 for a v2 bootstrap, and for one that names no versioned message at all', () => {
    assert.equal(load(bootstrap(hcm(V2_HCM))), 'V2');
    const plain = { name: 'c', connect_timeout: '1s', load_assignment: { cluster_name: 'c' } };
    assert.equal(load({ static_resources: { clusters: [plain] } }), 'V2');
  });

  it('is V3 for v3 type URLs inside a TypedStruct too', () => {
    const typed = {
      '@type': 'type.googleapis.com/udpa.type.v1.TypedStruct',
      type_url: V3_HCM,
      value: HCM_FIELDS,
    };
    assert.equal(load(bootstrap(typed)), 'V3');
  });

  it('is V2 when a v3 bootstrap also holds what only v2 has: a field v3 removed, a v2 type URL', () => {
    const hosts = [{ socket_address: { address: '127.0.0.1', port_value: 1 } }];
    assert.equal(load(bootstrap(hcm(V3_HCM), { hosts })), 'V2');
    const mixed = bootstrap(hcm(V3_HCM), {
      transport_socket: {
        name: 'envoy.transport_sockets.tls',
        typed_config: { '@type': 'type.googleapis.com/envoy.api.v2.auth.UpstreamTlsContext' },
      },
    });
    assert.equal(load(mixed), 'V2');
  });

  it('reads the file and --config-yaml together', () => {
    const demo = join(repoRoot, 'fixtures/real-world/envoy-demo.yaml');
    const admin = { admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } } };
    assert.equal(
      apiVersionOf(loadBootstrap(options({ configPath: demo, configYaml: stringify(admin) }))),
      'V3',
    );
    const v2Sink = {
      stats_sinks: [
        {
          name: 'envoy.stat_sinks.hystrix',
          typed_config: { '@type': 'type.googleapis.com/envoy.config.metrics.v2.HystrixSink' },
        },
      ],
    };
    assert.equal(
      apiVersionOf(loadBootstrap(options({ configPath: demo, configYaml: stringify(v2Sink) }))),
      'V2',
    );
  });
});
