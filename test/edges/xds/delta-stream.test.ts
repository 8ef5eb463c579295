/**
 * Incremental (delta) xDS, issue 30 item 2. Root cause: `api_type: DELTA_GRPC` was refused by
 * name in the config source's compile step, so a mesh that sends only what changed (one
 * endpoint, not every cluster) could not be followed. Now a delta stream (v3 ADS, v2 per
 * type) subscribes and unsubscribes by name, applies `resources` and `removed_resources`
 * with each resource's own version, ACKs or NACKs each nonce, and resumes a broken stream
 * with `initial_resource_versions`, so unchanged resources are not sent again.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../../events/index.js';
import { TYPE_URLS } from '../../../src/edges/xds/types.js';
import { versionHash } from '../../../src/edges/xds/version-hash.js';
import { httpListenerV3 } from '../../helpers/bootstraps.js';
import { DeltaXdsServer, versionOfResource } from '../../helpers/delta-xds-server.js';
import {
  GoControlPlane,
  type LogLine,
  type Snapshot,
  skipGoControlPlane,
} from '../../helpers/go-control-plane.js';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';
import { cluster, startXdsClient, type XdsClientHarness, xdsBootstrap } from '../../helpers/xds-client.js';
import {
  ADMIN,
  assignment,
  get,
  httpListener,
  staticCluster,
  statValue,
  type Upstream,
  until,
  upstream,
} from '../../helpers/xds-fixtures.js';
import { wireResource } from '../../helpers/xds-server.js';

const N = 1000;
const names = Array.from({ length: N }, (_, i) => `c${i}`);
const edsCluster = (name: string): JsonObject => ({
  name,
  connect_timeout: '0.25s',
  type: 'EDS',
  eds_cluster_config: { eds_config: { ads: {}, resource_api_version: 'V3' } },
});
const endpoints = (name: string, port = 10_000 + Number(name.slice(1))) => assignment(name, [port]);
const hostsOf = (h: XdsClientHarness, name: string) =>
  (h.ctx.store.state.clusters[name]?.hosts ?? []).map((host) => host.address);

describe('delta xDS on ADS (v3): 1,000 clusters', () => {
  let xds: DeltaXdsServer;
  let h: XdsClientHarness;
  const clusters = names.map(edsCluster);

  before(async () => {
    xds = await DeltaXdsServer.start();
    xds.set('cds', clusters, 's1');
    xds.set(
      'eds',
      names.map((n) => endpoints(n)),
      's1',
    );
    h = await startXdsClient(xdsBootstrap({ delta: xds.port }, 'cds'));
    await h.client.initialized;
  });
  after(async () => {
    await h?.close();
    await xds?.stop();
  });

  it("subscribes to every cluster (wildcard) and to each one's endpoints by name, and applies them all", async () => {
    const cds = await xds.answer('cds');
    assert.equal(
      cds.method,
      '/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources',
    );
    const first = xds.requests.find((r) => r.type_url === TYPE_URLS.V3.cds)!;
    assert.deepEqual(first.resource_names_subscribe, ['*'], 'a v3 wildcard subscription names *');
    const eds = xds.requests.filter((r) => r.type_url === TYPE_URLS.V3.eds);
    assert.equal(new Set(eds.flatMap((r) => r.resource_names_subscribe)).size, N);
    await until('every cluster has its endpoint', async () => names.every((n) => hostsOf(h, n).length === 1));
    const state = h.ctx.store.state;
    assert.equal(Object.values(state.clusters).filter((c) => c.addedViaApi).length, N);
    assert.equal(
      state.clusters.c1?.versionInfo,
      versionOfResource(clusters[1]!),
      'each cluster has its own version',
    );
    assert.equal(state.clusterManager.versionInfo, 's1', 'the type has the system version');
    assert.equal(h.counter('cluster_manager.cds.update_success'), 1);
    assert.equal(h.ctx.stats.gauge('cluster_manager.cds.version', 'NeverImport').value, versionHash('s1'));
    assert.equal(h.ctx.stats.textReadout('cluster_manager.cds.version_text').value, 's1');
    assert.ok(
      h.ctx.stats.gauge('cluster_manager.cds.update_time', 'NeverImport').value > Date.now() - 600_000,
    );
    assert.equal(h.counter('cluster.c7.update_success'), 1);
  });

  it('one endpoint change sends one resource, ACKed, and changes one cluster', async () => {
    const from = xds.requests.length;
    const sent = xds.responses.length;
    const before = hostsOf(h, 'c8');
    xds.set(
      'eds',
      names.map((n) => (n === 'c7' ? endpoints(n, 9999) : endpoints(n))),
      's2',
    );
    await xds.answer('eds', from);
    const responses = xds.responses.slice(sent);
    assert.deepEqual(
      responses.map((r) => [r.names, r.removed]),
      [[['c7'], []]],
      'one response, one resource',
    );
    await until('c7 moved', async () => hostsOf(h, 'c7')[0] === '127.0.0.1:9999');
    assert.deepEqual(hostsOf(h, 'c8'), before);
    assert.equal(h.counter('cluster.c7.update_success'), 2);
    assert.equal(h.counter('cluster.c8.update_success'), 1, 'c8 was not in the response');
  });

  it('a removal removes one cluster, and its endpoints are unsubscribed', async () => {
    const from = xds.requests.length;
    const sent = xds.responses.length;
    xds.set(
      'cds',
      clusters.filter((c) => c.name !== 'c500'),
      's3',
    );
    await xds.answer('cds', from);
    assert.deepEqual(
      xds.responses.slice(sent).map((r) => [r.names, r.removed]),
      [[[], ['c500']]],
    );
    await until('c500 gone', async () => h.ctx.store.state.clusters.c500 === undefined);
    assert.equal(Object.values(h.ctx.store.state.clusters).filter((c) => c.addedViaApi).length, N - 1);
    const unsubscribe = await xds.waitFor((r) => r.resource_names_unsubscribe.length > 0, 10_000, from);
    assert.equal(unsubscribe.type_url, TYPE_URLS.V3.eds);
    assert.deepEqual(unsubscribe.resource_names_unsubscribe, ['c500']);
    assert.equal(h.ctx.store.state.clusterManager.versionInfo, 's3');
  });

  it('a reconnect resumes with initial_resource_versions: only what changed meanwhile is sent', async () => {
    const port = xds.port;
    await xds.stop();
    await until('the break counted', async () => h.counter('cluster_manager.cds.update_failure') > 0);
    // While the stream is down, one endpoint changes.
    const ports: Record<string, number> = { c7: 9999, c9: 9998 };
    xds.set(
      'eds',
      names.map((n) => endpoints(n, ports[n])),
      's4',
    );
    const from = xds.requests.length;
    const sent = xds.responses.length;
    await xds.listen(port);
    const eds = await xds.answer('eds', from, false, 40_000);
    const firsts = xds.requests.slice(from).filter((r) => r.response_nonce === '');
    const held = (url: string) =>
      Object.keys(firsts.find((r) => r.type_url === url)?.initial_resource_versions ?? {}).length;
    assert.equal(held(TYPE_URLS.V3.cds), N - 1, 'every cluster held, with its version');
    assert.equal(held(TYPE_URLS.V3.eds), N - 1);
    assert.ok(!eds.error_detail, 'an ACK');
    assert.deepEqual(
      xds.responses.slice(sent).map((r) => [r.typeUrl, r.names]),
      [[TYPE_URLS.V3.eds, ['c9']]],
      'the unchanged 999 clusters and 998 assignments are not sent again',
    );
    await until('c9 moved', async () => hostsOf(h, 'c9')[0] === '127.0.0.1:9998');
  });
});

describe('a bad delta push is NACKed and changes nothing', () => {
  let xds: DeltaXdsServer;
  let h: XdsClientHarness;
  let nonce = 500;

  before(async () => {
    xds = await DeltaXdsServer.start();
    xds.set('cds', [cluster('web')], 'd1');
    h = await startXdsClient(xdsBootstrap({ delta: xds.port }, 'cds'));
    await h.client.initialized;
  });
  after(async () => {
    await h?.close();
    await xds?.stop();
  });

  /** Sends one delta response as it is and resolves with its ACK or NACK. */
  async function push(resources: Array<[string, JsonObject | null]>, removed: string[] = []) {
    const n = String(nonce++);
    const from = xds.requests.length;
    xds.sendRaw('cds', {
      system_version_info: `v${n}`,
      resources: resources.map(([name, config]) => ({
        name,
        version: `r${n}`,
        resource: config ? wireResource('cds', config, 'V3') : null,
        aliases: [],
      })),
      type_url: TYPE_URLS.V3.cds,
      nonce: n,
      removed_resources: removed,
    });
    return xds.waitFor((r) => r.response_nonce === n, 10_000, from);
  }

  it('rejects each bad response whole, naming what is wrong', async () => {
    const before = h.clusters();
    const cases: Array<[Array<[string, JsonObject | null]>, string[], RegExp]> = [
      [
        [
          ['a', cluster('a')],
          ['bad', cluster('bad', { connect_timeout: '0s' })],
        ],
        [],
        /Cluster 'bad': connect_timeout/,
      ],
      [[['a', cluster('other')]], [], /Cluster 'a': its resource is named 'other'/],
      [
        [
          ['a', cluster('a')],
          ['a', cluster('a')],
        ],
        [],
        /Cluster 'a': name: duplicate/,
      ],
      [[['a', null]], [], /Cluster 'a': resource: required field missing/],
      [[['', cluster('a')]], [], /Cluster #0: name: required field missing/],
      [[['a', cluster('a')]], ['a'], /both sent and in removed_resources/],
      [[['xds_cluster', cluster('xds_cluster')]], ['web'], /a static cluster of the bootstrap/],
    ];
    for (const [resources, removed, detail] of cases) {
      const rejected = h.counter('cluster_manager.cds.update_rejected');
      const answer = await push(resources, removed);
      assert.match(answer.error_detail?.message ?? '', detail);
      assert.equal(h.clusters(), before, 'nothing changed');
      assert.equal(h.counter('cluster_manager.cds.update_rejected'), rejected + 1);
    }
  });

  it('accepts a good one after: adds and removes by name, records each version', async () => {
    const answer = await push([['a', cluster('a')]], ['web']);
    assert.ok(!answer.error_detail, 'an ACK');
    await until('applied', async () => h.ctx.store.state.clusters.a !== undefined);
    assert.equal(h.ctx.store.state.clusters.web, undefined);
    assert.equal(h.ctx.store.state.clusters.a?.versionInfo, `r${nonce - 1}`);
    assert.equal(h.ctx.store.state.clusterManager.versionInfo, `v${nonce - 1}`);
  });
});

describe('a delta subscription the server never answers', () => {
  it('ends the wait at initial_fetch_timeout and counts init_fetch_timeout', async () => {
    const xds = await DeltaXdsServer.start();
    const lost = {
      ...edsCluster('lost'),
      eds_cluster_config: {
        eds_config: { ads: {}, resource_api_version: 'V3', initial_fetch_timeout: '0.3s' },
      },
    };
    xds.set('cds', [lost], 'v1');
    const h = await startXdsClient(xdsBootstrap({ delta: xds.port }, 'cds'));
    try {
      await h.client.initialized;
      await until('counted', async () => h.counter('cluster.lost.init_fetch_timeout') === 1);
      assert.equal(h.counter('cluster_manager.cds.init_fetch_timeout'), 0, 'CDS was answered');
    } finally {
      await h.close();
      await xds.stop();
    }
  });
});

describe('delta xDS per type (v2 incremental, api_type DELTA_GRPC)', () => {
  it('discovers clusters on the v2 DeltaClusters service, with v2 type URLs', async () => {
    const xds = await DeltaXdsServer.start();
    xds.set('cds', [cluster('web'), cluster('api')], 'v1');
    const client = await startXdsClient(xdsBootstrap({ deltaV2: xds.port }, 'cds'));
    try {
      await client.client.initialized;
      const ack = await xds.answer('cds');
      assert.equal(ack.method, '/envoy.api.v2.ClusterDiscoveryService/DeltaClusters');
      assert.equal(ack.type_url, TYPE_URLS.V2.cds);
      assert.deepEqual(
        JSON.parse(client.clusters())
          .map(([n]: [string]) => n)
          .sort(),
        ['api', 'web'],
      );
      const from = xds.requests.length;
      xds.set('cds', [cluster('web')], 'v2');
      await xds.answer('cds', from);
      await until('api removed', async () => client.ctx.store.state.clusters.api === undefined);
    } finally {
      await client.close();
      await xds.stop();
    }
  });
});

describe('delta xDS from the real go-control-plane, --concurrency 2: 1,000 clusters', {
  skip: skipGoControlPlane,
}, () => {
  let cp: GoControlPlane;
  let proxy: ProxyProcess;
  let port: number;
  const upstreams: Upstream[] = [];
  /** The endpoint port of each cluster that does not have the default one. */
  const moved: Record<string, number> = {};
  let live = names;

  const snapshot = (version: string): Snapshot => ({
    node_id: 'delta-node',
    version,
    clusters: live.map(edsCluster),
    endpoints: live.map((n) => endpoints(n, moved[n])),
  });
  const responses = (from: number, type: string) =>
    cp.log
      .slice(from)
      .filter((l) => l.event === 'delta_response' && String(l.type_url).endsWith(type))
      .map((l) => ({
        names: (l.resources as Array<{ name: string }>).map((r) => r.name),
        removed: l.removed_resources as string[],
      }));
  /** The ACK of the last delta response of `type` from log line `from` on. */
  const acked = async (type: string, from: number): Promise<LogLine> => {
    const response = await cp.waitFor(
      (l) => l.event === 'delta_response' && String(l.type_url).endsWith(type),
      20_000,
      from,
    );
    return cp.waitFor(
      (l) =>
        l.event === 'delta_request' &&
        l.stream === response.stream &&
        l.response_nonce === response.nonce &&
        l.error_detail !== true,
      20_000,
      from,
    );
  };
  const discovered = async () =>
    (await proxy.get('/clusters')).body.split('\n').filter((l) => /::added_via_api::true$/.test(l)).length;

  before(async () => {
    for (const name of ['a', 'b']) upstreams.push(await upstream(name));
    moved.c0 = upstreams[0]!.port;
    // Only an explicit `*` subscribes to every cluster: the proxy's v3 wildcard names it.
    cp = await GoControlPlane.start(snapshot('1'), ['-legacy-wildcard=false']);
    proxy = await startProxyProcess(
      {
        admin: ADMIN,
        node: { id: 'delta-node', cluster: 'mesh' },
        dynamic_resources: {
          cds_config: { ads: {}, resource_api_version: 'V3' },
          ads_config: {
            api_type: 'DELTA_GRPC',
            transport_api_version: 'V3',
            grpc_services: [{ envoy_grpc: { cluster_name: 'xds_cluster' } }],
          },
        },
        static_resources: {
          listeners: [httpListener('in', 'c0')],
          clusters: [staticCluster('xds_cluster', [cp.port], true)],
        },
      },
      ['--concurrency', '2'],
      60_000,
    );
    port = await proxy.listenerPort('in');
  });
  after(async () => {
    await proxy?.stop();
    await cp?.stop();
    await Promise.all(upstreams.map((u) => u.close()));
  });

  it('goes LIVE with every cluster and its endpoints, each sent once, and serves from the workers', async () => {
    await acked('ClusterLoadAssignment', 0);
    const cds = responses(0, 'Cluster');
    assert.equal(cds.flatMap((r) => r.names).length, N, 'each cluster sent once');
    const open = cp.log.find((l) => l.event === 'stream_open');
    assert.equal(open?.protocol, 'delta');
    assert.equal(
      open?.method,
      '/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources',
    );
    const edsSubscribed = cp.log
      .filter((l) => l.event === 'delta_request' && String(l.type_url).endsWith('ClusterLoadAssignment'))
      .flatMap((l) => l.resource_names_subscribe as string[]);
    assert.equal(new Set(edsSubscribed).size, N, "each cluster's endpoints subscribed by name");
    assert.equal(await discovered(), N);
    for (let i = 0; i < 4; i++) assert.equal((await get(port)).body, 'a');
  });

  it('one endpoint change sends one resource, and every worker follows it', async () => {
    const from = cp.log.length;
    moved.c0 = upstreams[1]!.port;
    cp.set(snapshot('2'));
    await acked('ClusterLoadAssignment', from);
    assert.deepEqual(responses(from, 'ClusterLoadAssignment'), [{ names: ['c0'], removed: [] }]);
    assert.deepEqual(responses(from, 'Cluster'), [], 'no cluster re-sent');
    await until('traffic moves to b', async () => (await get(port)).body === 'b');
    for (let i = 0; i < 6; i++) assert.equal((await get(port)).body, 'b', 'on every worker');
  });

  it('a removal removes one cluster', async () => {
    const from = cp.log.length;
    live = names.filter((n) => n !== 'c999');
    cp.set(snapshot('3'));
    await acked('.Cluster', from);
    assert.deepEqual(responses(from, '.Cluster'), [{ names: [], removed: ['c999'] }]);
    await until('c999 gone', async () => (await discovered()) === N - 1);
    assert.doesNotMatch((await proxy.get('/clusters')).body, /^c999::/m);
    await cp.waitFor(
      (l) => l.event === 'delta_request' && (l.resource_names_unsubscribe as string[]).includes('c999'),
      20_000,
      from,
    );
  });

  it('a reconnect resumes with the versions held: only a resource changed meanwhile is sent', async () => {
    const cpPort = cp.port;
    await cp.stop();
    moved.c1 = upstreams[0]!.port;
    cp = await GoControlPlane.start(snapshot('4'), ['-legacy-wildcard=false', '-port', String(cpPort)]);
    const eds = await acked('ClusterLoadAssignment', 0);
    const firsts = cp.log.filter((l) => l.event === 'delta_request' && l.response_nonce === '');
    const held = (type: string) =>
      Object.keys(
        (firsts.find((l) => String(l.type_url).endsWith(type))?.initial_resource_versions ?? {}) as object,
      ).length;
    assert.equal(held('.Cluster'), N - 1);
    assert.equal(held('ClusterLoadAssignment'), N - 1);
    assert.ok(eds);
    assert.deepEqual(responses(0, 'ClusterLoadAssignment'), [{ names: ['c1'], removed: [] }]);
    // A wildcard stream is answered at once, even with nothing to send.
    assert.deepEqual(
      responses(0, '.Cluster').flatMap((r) => r.names),
      [],
      'the 999 clusters are not sent again',
    );
    assert.equal(await discovered(), N - 1);
    assert.equal((await get(port)).body, 'b');
  });
});

describe('delta LDS and RDS per type (v3) from the real go-control-plane', {
  skip: skipGoControlPlane,
}, () => {
  const DELTA_V3 = {
    api_config_source: {
      api_type: 'DELTA_GRPC',
      transport_api_version: 'V3',
      grpc_services: [{ envoy_grpc: { cluster_name: 'xds_cluster' } }],
    },
    resource_api_version: 'V3',
  };
  const listener = httpListenerV3('in', {
    rds: { config_source: DELTA_V3, route_config_name: 'routes' },
    http_filters: [
      {
        name: 'envoy.filters.http.router',
        typed_config: {
          '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router',
        },
      },
    ],
  });
  const routes = (body: string) => ({
    name: 'routes',
    virtual_hosts: [
      {
        name: 'all',
        domains: ['*'],
        routes: [{ match: { prefix: '/' }, direct_response: { status: 200, body: { inline_string: body } } }],
      },
    ],
  });
  const snapshot = (version: string, body: string): Snapshot => ({
    node_id: 'delta-node',
    version,
    listeners: [listener],
    routes: [routes(body)],
  });

  it('binds the discovered listener, serves its table, and a table change sends that table alone', async () => {
    const cp = await GoControlPlane.start(snapshot('1', 'first'));
    let proxy: ProxyProcess | undefined;
    try {
      proxy = await startProxyProcess(
        {
          admin: ADMIN,
          node: { id: 'delta-node' },
          dynamic_resources: { lds_config: DELTA_V3 },
          static_resources: { clusters: [staticCluster('xds_cluster', [cp.port], true)] },
        },
        ['--concurrency', '1'],
      );
      const port = await proxy.listenerPort('in');
      assert.equal((await get(port)).body, 'first');
      const methods = new Set(cp.log.filter((l) => l.event === 'stream_open').map((l) => l.method));
      assert.deepEqual([...methods].sort(), [
        '/envoy.service.listener.v3.ListenerDiscoveryService/DeltaListeners',
        '/envoy.service.route.v3.RouteDiscoveryService/DeltaRoutes',
      ]);
      const from = cp.log.length;
      cp.set(snapshot('2', 'second'));
      await until('the new table serves', async () => (await get(port)).body === 'second', 20_000);
      const sent = cp.log
        .slice(from)
        .filter((l) => l.event === 'delta_response')
        .map((l) => [
          String(l.type_url).split('.').pop(),
          (l.resources as Array<{ name: string }>).map((r) => r.name),
        ]);
      assert.deepEqual(sent, [['RouteConfiguration', ['routes']]], 'the listener is not sent again');
      assert.equal(await statValue(proxy, 'http.in.rds.routes.update_success'), 2);
    } finally {
      await proxy?.stop();
      await cp.stop();
    }
  });
});
