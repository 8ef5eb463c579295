/**
 * The network filter registry: each factory is found by every name the reference accepts
 * (`envoy.` and `proxy.`, long and deprecated short), by each type URL of its config (v2, v3,
 * v2alpha) given alone, and by each inside a `TypedStruct` (`udpa.type.v1`, `xds.type.v3`);
 * the loader's extensions are the factories; a chain is compiled by the factories
 * (terminal last, read filters before it) and an unknown name or type URL is refused by path.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonObject } from '../../../events/index.js';
import { EXTENSIONS } from '../../../src/bootstrap/catalog.js';
import { compileListener } from '../../../src/config/listener.js';
import {
  NETWORK_FILTER_FACTORIES,
  networkFilterFactory,
} from '../../../src/dataplane/network-filters/registry.js';
import { bootstrapOf, type Dump, errorsOf, loadYaml } from '../../helpers/bootstrap.js';

const TCP_PROXY = 'envoy.config.filter.network.tcp_proxy.v2.TcpProxy';
const ROUTES = {
  virtual_hosts: [
    { name: 'v', domains: ['*'], routes: [{ match: { prefix: '/' }, direct_response: { status: 200 } }] },
  ],
};

/** A config each filter compiles without findings. */
const MINIMAL: Record<string, JsonObject> = {
  'envoy.filters.network.http_connection_manager': { stat_prefix: 'h', route_config: ROUTES },
  'envoy.filters.network.tcp_proxy': { stat_prefix: 't', cluster: 'c' },
  'envoy.filters.network.rbac': { stat_prefix: 'r.', rules: { action: 'ALLOW', policies: {} } },
  'envoy.filters.network.sni_cluster': {},
  'envoy.filters.network.postgres_proxy': { stat_prefix: 'p' },
  'envoy.filters.network.mysql_proxy': { stat_prefix: 'm' },
  'envoy.filters.network.ext_authz': {
    stat_prefix: 'a',
    grpc_service: { envoy_grpc: { cluster_name: 'c' } },
  },
  'envoy.filters.network.local_ratelimit': {
    stat_prefix: 'l',
    token_bucket: { max_tokens: 1, fill_interval: '1s' },
  },
};

/** A bootstrap with one chain: `entry`, then a TCP proxy unless `entry` ends chains itself. */
function bootstrap(entry: JsonObject, terminal: boolean): string {
  const tcp = {
    name: 'envoy.tcp_proxy',
    typed_config: { '@type': `type.googleapis.com/${TCP_PROXY}`, stat_prefix: 't', cluster: 'c' },
  };
  return JSON.stringify({
    static_resources: {
      listeners: [
        {
          name: 'l',
          address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
          filter_chains: [{ filters: terminal ? [entry] : [entry, tcp] }],
        },
      ],
      clusters: [{ name: 'c', connect_timeout: '1s', load_assignment: { cluster_name: 'c' } }],
    },
  });
}

/** Each way a config can name the filter, as the `filters` entry it writes. */
function spellings(f: (typeof NETWORK_FILTER_FACTORIES)[number]): Array<[string, JsonObject]> {
  const config = MINIMAL[f.name] ?? {};
  const typeUrls = [f.configType, ...Object.keys(f.typeAliases ?? {})].map((t) => `type.googleapis.com/${t}`);
  const names = [f.name, ...(f.aliases ?? [])].flatMap((n) => [n, `proxy.${n.slice('envoy.'.length)}`]);
  return [
    ...names.map((name): [string, JsonObject] => [
      name,
      { name, typed_config: { '@type': `type.googleapis.com/${f.configType}`, ...config } },
    ]),
    ...names.map((name): [string, JsonObject] => [`${name} (config)`, { name, config }]),
    ...typeUrls.map((url): [string, JsonObject] => [
      url,
      { name: 'mine', typed_config: { '@type': url, ...config } },
    ]),
    ...typeUrls.flatMap((url) =>
      ['udpa.type.v1.TypedStruct', 'xds.type.v3.TypedStruct'].map((wrapper): [string, JsonObject] => [
        `${wrapper} of ${url}`,
        {
          name: 'mine',
          typed_config: { '@type': `type.googleapis.com/${wrapper}`, type_url: url, value: config },
        },
      ]),
    ),
  ];
}

describe('network filter registry', () => {
  it('holds each filter once, its identity the one the loader reads', () => {
    assert.deepEqual(
      EXTENSIONS.filter((e) => e.category === 'envoy.filters.network').map((e) => e.name),
      NETWORK_FILTER_FACTORIES.map((f) => f.name),
    );
    for (const f of NETWORK_FILTER_FACTORIES) {
      assert.equal(networkFilterFactory(f.configType), f);
      // postgres_proxy's only message is v3alpha: the reference never made it v2 or v3.
      assert.ok(
        [f.configType, ...Object.keys(f.typeAliases ?? {})].some((t) => /\.v3(alpha)?\./.test(t)),
        `${f.name} has a v3 type URL`,
      );
      assert.ok(MINIMAL[f.name], `${f.name} has a minimal config in this test`);
    }
  });

  for (const f of NETWORK_FILTER_FACTORIES) {
    it(`finds ${f.name} by every name and type URL`, () => {
      for (const [how, entry] of spellings(f)) {
        const b = bootstrapOf(loadYaml(bootstrap(entry, f.terminal))) as Dump;
        const filters = b.static_resources.listeners[0].filter_chains[0].filters;
        assert.equal(filters[0].typed_config['@type'], `type.googleapis.com/${f.configType}`, how);
        const { value, findings } = compileListener(b.static_resources.listeners[0], 'l');
        assert.deepEqual(findings.errors, [], how);
        const chain = value?.chains[0]?.filters;
        const compiled = f.terminal ? chain?.terminal : chain?.readFilters[0];
        assert.equal(compiled?.configType, f.configType, how);
      }
    });
  }

  it('refuses an unknown name and an unknown type URL by the path of the filter', () => {
    const at = /static_resources\.listeners\[0\]\.filter_chains\[0\]\.filters\[0\]/;
    const byName = errorsOf(
      loadYaml(bootstrap({ name: 'envoy.filters.network.no_such', typed_config: {} }, true)),
    );
    assert.match(
      byName.join('\n'),
      new RegExp(`${at.source}\\.name: unknown extension 'envoy\\.filters\\.network\\.no_such'`),
    );
    const byType = errorsOf(
      loadYaml(
        bootstrap(
          {
            name: 'x',
            typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.network.no_such.v3.Nope' },
          },
          true,
        ),
      ),
    );
    assert.match(byType.join('\n'), at);
    assert.match(byType.join('\n'), /no_such/);
  });

  it('compiles a chain in order: read filters first, the terminal one last and only there', () => {
    const rbac = {
      name: 'envoy.filters.network.rbac',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.config.filter.network.rbac.v2.RBAC',
        ...MINIMAL['envoy.filters.network.rbac'],
      },
    };
    assert.match(
      errorsOf(loadYaml(bootstrap(rbac, true))).join('\n'),
      /filters\[0\]: 'envoy\.filters\.network\.rbac' must be followed by envoy\.filters\.network\.http_connection_manager or envoy\.filters\.network\.tcp_proxy/,
    );
    const tcp = {
      name: 'envoy.tcp_proxy',
      typed_config: { '@type': `type.googleapis.com/${TCP_PROXY}`, stat_prefix: 't', cluster: 'c' },
    };
    assert.match(
      errorsOf(loadYaml(bootstrap(tcp, false))).join('\n'),
      /filters\[0\]: 'envoy\.tcp_proxy' is a terminal filter and must be the last of its chain/,
    );
    const b = bootstrapOf(loadYaml(bootstrap(rbac, false))) as Dump;
    const chain = compileListener(b.static_resources.listeners[0], 'l').value?.chains[0]?.filters;
    assert.deepEqual(
      chain?.readFilters.map((f) => f.configType),
      ['envoy.config.filter.network.rbac.v2.RBAC'],
    );
    assert.equal(chain?.terminal.configType, TCP_PROXY);
  });
});
