/**
 * Every dynamic resource's status in /config_dump (issue 30): each with its version and
 * `last_updated`, and `error_state` (the last rejection's details, time and version) when its
 * last update was rejected, for every type; a name only ever rejected is listed with its error
 * alone. Before, only listeners carried `error_state`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  bootstrapLoaded,
  clustersDiscovered,
  type Envelope,
  type JsonObject,
  type ProxyEvent,
  type RawCluster,
  routeConfigSet,
  secretSet,
  updateRejected,
} from '../../../events/index.js';
import { foldAll, initialState, type State } from '../../../reducers/index.js';
import { selectDumps } from '../../../views/config-dump/select.js';
import { madeWhole } from '../../../views/lazy-list.js';

const eds = (name: string): RawCluster => ({
  name,
  type: 'EDS',
  connect_timeout: '1s',
  eds_cluster_config: { eds_config: { ads: {} }, service_name: `${name}-svc` },
});

function fold(events: ProxyEvent[]): State {
  const all: ProxyEvent[] = [
    bootstrapLoaded({ bootstrap: { static_resources: {} }, options: {}, version: 't', sources: [] }),
    ...events,
  ];
  const envs: Envelope<ProxyEvent>[] = all.map((event, i) => ({
    seq: i + 1,
    at: 1000 * (i + 1),
    source: 'test',
    event,
  }));
  return foldAll(initialState, envs);
}

const rejected = (resource: string, name: string, versionInfo: string) =>
  updateRejected({ resource, name, versionInfo, errors: [`${name} is bad`] });

function dump(state: State, key: string): Record<string, Array<Record<string, unknown>>> {
  const found = selectDumps(state, true, null).find((d) => d.key === key);
  return madeWhole(found?.fields) as Record<string, Array<Record<string, unknown>>>;
}

const errorOf = (entry: Record<string, unknown> | undefined) =>
  entry?.error_state as { details: string; version_info: string; last_update_attempt: string } | undefined;

test('clusters, endpoints, route tables and secrets carry error_state after a rejection, with the version they still serve', () => {
  const state = fold([
    clustersDiscovered({ versionInfo: 'c1', added: [eds('web'), eds('api')], updated: [], removed: [] }),
    routeConfigSet({ routeConfig: { name: 'routes', virtual_hosts: [] }, versionInfo: 'r1' }),
    secretSet({ secret: { name: 'cert', validation_context: {} }, versionInfo: 's1' }),
    rejected('Cluster', 'web', 'c2'),
    rejected('Cluster', 'ghost', 'c2'),
    rejected('ClusterLoadAssignment', 'web-svc', 'e2'),
    rejected('RouteConfiguration', 'routes', 'r2'),
    rejected('RouteConfiguration', 'never', 'r2'),
    rejected('Secret', 'cert', 's2'),
  ]);
  const clusters = dump(state, 'clusters').dynamic_warming_clusters ?? [];
  const byName = (list: Array<Record<string, unknown>>, field: string) =>
    new Map(list.map((e) => [String((e[field] as { name?: string } | undefined)?.name ?? e.name), e]));
  const warm = byName(clusters, 'cluster');
  assert.equal(errorOf(warm.get('web'))?.version_info, 'c2');
  assert.equal(errorOf(warm.get('web'))?.details, 'web is bad');
  assert.match(errorOf(warm.get('web'))?.last_update_attempt ?? '', /^1970-01-01T00:00:05/);
  assert.equal(warm.get('web')?.version_info, 'c1', 'the version it serves is still the accepted one');
  const active = byName(dump(state, 'clusters').dynamic_active_clusters ?? [], 'cluster');
  assert.equal(
    errorOf(active.get('ghost'))?.version_info,
    'c2',
    'a cluster only ever rejected is listed with its error',
  );

  const endpoints = dump(state, 'endpoints').dynamic_endpoint_configs ?? [];
  const web = endpoints.find((e) => (e.endpoint_config as { cluster_name: string }).cluster_name === 'web');
  assert.equal(errorOf(web)?.version_info, 'e2', 'keyed by the EDS service name');

  const routes = byName(dump(state, 'routes').dynamic_route_configs ?? [], 'route_config');
  assert.equal(routes.get('routes')?.version_info, 'r1');
  assert.equal(errorOf(routes.get('routes'))?.version_info, 'r2');
  assert.equal(errorOf(routes.get('never'))?.details, 'never is bad');

  const secrets = byName(dump(state, 'secrets').dynamic_active_secrets ?? [], 'name');
  assert.equal(secrets.get('cert')?.version_info, 's1');
  assert.equal(errorOf(secrets.get('cert'))?.version_info, 's2');
});

test('a config accepted after the rejection clears error_state', () => {
  const state = fold([
    rejected('RouteConfiguration', 'routes', 'r0'),
    routeConfigSet({ routeConfig: { name: 'routes', virtual_hosts: [] }, versionInfo: 'r1' }),
  ]);
  const routes = dump(state, 'routes').dynamic_route_configs ?? [];
  assert.equal(routes.length, 1);
  assert.equal(routes[0]?.version_info, 'r1');
  assert.equal(routes[0]?.error_state, undefined);
});

/** A bootstrap's static resources in their canonical (v2) form, as the loader keeps them. */
const STATIC: JsonObject = {
  static_resources: {
    listeners: [
      {
        name: 'l',
        address: { socket_address: { address: '127.0.0.1', port_value: 10000 } },
        filter_chains: [
          {
            filters: [
              {
                name: 'envoy.filters.network.http_connection_manager',
                typed_config: {
                  '@type':
                    'type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager',
                  stat_prefix: 'in',
                  route_config: {
                    name: 'local',
                    virtual_hosts: [
                      {
                        name: 'v',
                        domains: ['*'],
                        routes: [
                          {
                            match: { prefix: '/' },
                            route: { cluster: 'c', host_rewrite: 'www.example.org' },
                          },
                        ],
                      },
                    ],
                  },
                },
              },
            ],
          },
        ],
      },
    ],
    clusters: [
      {
        name: 'c',
        connect_timeout: '1s',
        transport_socket: {
          name: 'envoy.transport_sockets.tls',
          typed_config: { '@type': 'type.googleapis.com/envoy.api.v2.auth.UpstreamTlsContext', sni: 'x' },
        },
      },
    ],
    secrets: [{ name: 's', validation_context: {} }],
  },
};

function staticDumps(apiVersion: 'V2' | 'V3' | undefined) {
  const state = foldAll(initialState, [
    {
      seq: 1,
      at: 1000,
      source: 'test',
      event: bootstrapLoaded({ bootstrap: STATIC, options: {}, version: 't', sources: [], apiVersion }),
    },
  ]);
  const get = (key: string) =>
    dump(state, key) as unknown as Record<string, Array<Record<string, JsonObject>>>;
  const boot = dump(state, 'bootstrap') as unknown as {
    bootstrap: { static_resources: Record<string, JsonObject[]> };
  };
  const hcmOf = (listener: JsonObject) =>
    JSON.stringify(
      (listener as { filter_chains: Array<{ filters: JsonObject[] }> }).filter_chains[0]!.filters[0],
    );
  return {
    cluster: get('clusters').static_clusters![0]!.cluster!,
    tls: JSON.stringify(get('clusters').static_clusters![0]!.cluster!.transport_socket),
    endpoints: get('endpoints').static_endpoint_configs![0]!.endpoint_config!['@type'],
    listener: get('listeners').static_listeners![0]!.listener!['@type'],
    hcm: hcmOf(get('listeners').static_listeners![0]!.listener!),
    route: JSON.stringify(get('routes').static_route_configs![0]!.route_config),
    secret: get('secrets').static_secrets![0]!.secret!['@type'],
    bootstrapHcm: hcmOf(boot.bootstrap.static_resources.listeners![0]!),
    bootstrapTls: JSON.stringify(boot.bootstrap.static_resources.clusters![0]!.transport_socket),
  };
}

test('a bootstrap written in v3 has its static resources dumped in v3: type URLs and renamed fields', () => {
  const v3 = staticDumps('V3');
  assert.equal(v3.cluster['@type'], 'type.googleapis.com/envoy.config.cluster.v3.Cluster');
  assert.match(
    v3.tls,
    /"@type":"type\.googleapis\.com\/envoy\.extensions\.transport_sockets\.tls\.v3\.UpstreamTlsContext"/,
  );
  assert.equal(v3.endpoints, 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment');
  assert.equal(v3.listener, 'type.googleapis.com/envoy.config.listener.v3.Listener');
  for (const text of [v3.hcm, v3.bootstrapHcm]) {
    assert.match(
      text,
      /envoy\.extensions\.filters\.network\.http_connection_manager\.v3\.HttpConnectionManager/,
    );
    assert.match(text, /"host_rewrite_literal":"www\.example\.org"/);
    assert.doesNotMatch(text, /\.v2\.|"host_rewrite"/);
  }
  assert.match(
    v3.route,
    /^\{"@type":"type\.googleapis\.com\/envoy\.config\.route\.v3\.RouteConfiguration".*"host_rewrite_literal"/,
  );
  assert.equal(v3.secret, 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret');
  assert.match(v3.bootstrapTls, /tls\.v3\.UpstreamTlsContext/);
});

test('a bootstrap written in v2 (or loaded from a log that did not say) is dumped in v2', () => {
  for (const version of ['V2', undefined] as const) {
    const v2 = staticDumps(version);
    assert.equal(v2.cluster['@type'], 'type.googleapis.com/envoy.api.v2.Cluster');
    assert.equal(v2.listener, 'type.googleapis.com/envoy.api.v2.Listener');
    for (const text of [v2.hcm, v2.bootstrapHcm, v2.route]) {
      assert.match(text, /"host_rewrite":"www\.example\.org"/);
      assert.doesNotMatch(text, /\.v3\./);
    }
    assert.equal(v2.secret, 'type.googleapis.com/envoy.api.v2.auth.Secret');
    assert.match(v2.bootstrapTls, /envoy\.api\.v2\.auth\.UpstreamTlsContext/);
  }
});

test('a secret discovered over an SDS source that asks for V3 is dumped in v3, one over V2 in v2', () => {
  const sds = (name: string, version: string) => ({
    name,
    sds_config: { ads: {}, resource_api_version: version },
  });
  const tls = (name: string, version: string) => ({
    name: 'envoy.transport_sockets.tls',
    typed_config: {
      '@type': 'type.googleapis.com/envoy.api.v2.auth.UpstreamTlsContext',
      common_tls_context: { tls_certificate_sds_secret_configs: [sds(name, version)] },
    },
  });
  const cluster = (name: string, secret: string, version: string) => ({
    name,
    connect_timeout: '1s',
    transport_socket: tls(secret, version),
  });
  const state = foldAll(
    initialState,
    [
      bootstrapLoaded({
        bootstrap: {
          static_resources: { clusters: [cluster('a', 'v3-cert', 'V3'), cluster('b', 'v2-cert', 'V2')] },
        },
        options: {},
        version: 't',
        sources: [],
      }),
      secretSet({ secret: { name: 'v3-cert', tls_certificate: {} }, versionInfo: 's1' }),
      secretSet({ secret: { name: 'v2-cert', tls_certificate: {} }, versionInfo: 's1' }),
    ].map((event, i) => ({ seq: i + 1, at: 1000 * (i + 1), source: 'test', event })),
  );
  const secrets = dump(state, 'secrets').dynamic_active_secrets!;
  const typeOf = (name: string) =>
    (secrets.find((s) => s.name === name)?.secret as JsonObject | undefined)?.['@type'];
  assert.equal(typeOf('v3-cert'), 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret');
  assert.equal(typeOf('v2-cert'), 'type.googleapis.com/envoy.api.v2.auth.Secret');
});
