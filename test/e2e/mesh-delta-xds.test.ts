/**
 * A sidecar driven by delta ADS from the real go-control-plane server at --concurrency 2, as a
 * mesh drives it: its listener (LDS), route table (RDS), clusters (CDS) and endpoints (EDS) are
 * added, updated and removed while clients send requests; a route names a cluster that arrives
 * later; a cluster whose endpoints have not arrived (warming) takes no traffic; a removed
 * cluster's request in flight completes; and while the management server is down and after it
 * comes back, nothing fails and the proxy resubscribes with the versions it holds.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { httpListenerV3 } from '../helpers/bootstraps.js';
import {
  GoControlPlane,
  type LogLine,
  type Snapshot,
  skipGoControlPlane,
} from '../helpers/go-control-plane.js';
import type { Answer } from '../helpers/http-send.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';
import { type SteadyLoad, steadyLoad } from '../helpers/steady-load.js';
import { ADMIN, assignment, staticCluster, type Upstream, until, upstream } from '../helpers/xds-fixtures.js';

const ADS_V3 = { ads: {}, resource_api_version: 'V3' };
const ANSWER_MS = 20_000;

const edsCluster = (name: string, serviceName?: string): JsonObject => ({
  name,
  // A loaded 2-core machine can take longer than a sidecar's usual connect timeout.
  connect_timeout: '5s',
  type: 'EDS',
  // Long enough that a warming cluster stays warming for the whole test.
  eds_cluster_config: {
    eds_config: { ...ADS_V3, initial_fetch_timeout: '120s' },
    ...(serviceName ? { service_name: serviceName } : {}),
  },
});

const listener = (name: string, table: string, bufferLimit?: number): JsonObject => ({
  ...httpListenerV3(name, {
    rds: { config_source: ADS_V3, route_config_name: table },
    http_filters: [
      {
        name: 'envoy.filters.http.router',
        typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' },
      },
    ],
  }),
  ...(bufferLimit ? { per_connection_buffer_limit_bytes: bufferLimit } : {}),
});

/** `/later/...` to cluster `later`, `/slow` to `slow`, everything else to `app`. */
const routes = (name: string, tableVersion: string): JsonObject => ({
  name,
  virtual_hosts: [
    {
      name: 'all',
      domains: ['*'],
      response_headers_to_add: [{ header: { key: 'x-table', value: tableVersion } }],
      routes: [
        { match: { prefix: '/later' }, route: { cluster: 'later', timeout: '30s' } },
        { match: { prefix: '/slow' }, route: { cluster: 'slow', timeout: '30s' } },
        { match: { prefix: '/' }, route: { cluster: 'app' } },
      ],
    },
  ],
});

/** A GET answered within ANSWER_MS: its status, headers and body. */
function getPath(port: number, path: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on('error', reject);
    });
    req.setTimeout(ANSWER_MS, () => req.destroy(new Error(`no answer within ${ANSWER_MS / 1000} s`)));
    req.on('error', reject);
  });
}

/** The status of every GET of `/` sent one after another while `change` runs (0: no answer). */
async function statusesWhile(port: number, change: (statuses: number[]) => Promise<void>): Promise<number[]> {
  const statuses: number[] = [];
  let stop = false;
  const probe = (async () => {
    while (!stop)
      statuses.push(
        await getPath(port, '/').then(
          (r) => r.status,
          () => 0,
        ),
      );
  })();
  try {
    await change(statuses);
  } finally {
    stop = true;
    await probe;
  }
  return statuses;
}

/** An upstream that answers `slow` once released (or after 20 s), and says when a request came in. */
async function slowUpstream() {
  const waiting: Array<() => void> = [];
  const server = http.createServer((_req, res) => {
    const timer = setTimeout(() => res.end('slow'), 20_000);
    waiting.push(() => {
      clearTimeout(timer);
      res.end('slow');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    waiting: () => waiting.length,
    release: () => {
      for (const done of waiting.splice(0)) done();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('delta ADS from go-control-plane drives LDS, RDS, CDS and EDS under load (--concurrency 2)', {
  skip: skipGoControlPlane,
  timeout: 300_000,
}, () => {
  let cp: GoControlPlane;
  let proxy: ProxyProcess;
  let port: number;
  let load: SteadyLoad;
  let app1: Upstream;
  let app2: Upstream;
  let laterApp: Upstream;
  let slow: Awaited<ReturnType<typeof slowUpstream>>;
  let version = 0;
  const timeouts: Record<string, string> = {};
  const state = {
    listeners: ['ingress'],
    clusters: ['app', 'slow'],
    endpoints: {} as Record<string, number>,
    bufferLimit: undefined as number | undefined,
    tableVersion: 'v1',
    ingressTable: 'ingress-routes',
    serviceNames: {} as Record<string, string>,
  };

  const snapshot = (): Snapshot => ({
    node_id: 'sidecar',
    version: String(version),
    listeners: state.listeners.map((n) =>
      listener(n, n === 'ingress' ? state.ingressTable : 'extra-routes', state.bufferLimit),
    ),
    routes: ['ingress-routes', 'ingress-routes-b', 'extra-routes'].map((t) => routes(t, state.tableVersion)),
    clusters: state.clusters.map((n) => ({
      ...edsCluster(n, state.serviceNames[n]),
      ...(timeouts[n] ? { connect_timeout: timeouts[n] } : {}),
    })),
    endpoints: Object.entries(state.endpoints).map(([name, p]) => assignment(name, [p])),
  });

  /** Serves the state as the next version; resolves with the first log index of its push. */
  const push = (): number => {
    version += 1;
    const from = cp.log.length;
    cp.set(snapshot());
    return from;
  };

  /** The ACK (never a NACK) of the next delta response of `type` from log line `from` on. */
  const acked = (type: string, from: number): Promise<LogLine> =>
    cp.deltaAck(type, (l) => String(l.type_url).endsWith(type), from);

  const clusterNames = async () =>
    new Set(
      (await proxy.get('/clusters')).body
        .split('\n')
        .map((l) => l.split('::')[0]!)
        .filter((n) => n !== ''),
    );

  before(async () => {
    app1 = await upstream('app');
    app2 = await upstream('app');
    laterApp = await upstream('later');
    slow = await slowUpstream();
    state.endpoints = { app: app1.port, slow: slow.port };
    cp = await GoControlPlane.start(snapshot(), ['-legacy-wildcard=false']);
    proxy = await startProxyProcess(
      {
        admin: ADMIN,
        node: { id: 'sidecar', cluster: 'mesh' },
        dynamic_resources: {
          lds_config: ADS_V3,
          cds_config: ADS_V3,
          ads_config: {
            api_type: 'DELTA_GRPC',
            transport_api_version: 'V3',
            grpc_services: [{ envoy_grpc: { cluster_name: 'xds_cluster' } }],
          },
        },
        static_resources: { clusters: [staticCluster('xds_cluster', [cp.port], true)] },
      },
      ['--concurrency', '2'],
    );
    port = await proxy.listenerPort('ingress');
    load = steadyLoad(port, {
      h1Clients: 2,
      h2Clients: 1,
      probeEveryMs: 100,
      maxRequests: 2_000_000,
      body: 'app',
    });
    await until('traffic', async () => load.ok > 20, 30_000);
  });

  after(async () => {
    await load?.stop();
    await proxy?.stop();
    await cp?.stop();
    slow?.release();
    await Promise.all([app1, app2, laterApp, slow].map((u) => u?.close()));
  });

  it('a route to a cluster that is not there yet answers 503, and serves once the cluster and its endpoints arrive', async () => {
    const before = await getPath(port, '/later');
    assert.equal(before.status, 503);
    // The cluster arrives without its endpoints: it warms, and warming takes no traffic.
    state.clusters.push('later');
    await acked('.Cluster', push());
    await cp.waitFor(
      (l) =>
        l.event === 'delta_request' &&
        ((l.resource_names_subscribe as string[] | null) ?? []).includes('later'),
      30_000,
    );
    for (let i = 0; i < 4; i++)
      assert.equal((await getPath(port, '/later')).status, 503, 'warming: no traffic');
    state.endpoints.later = laterApp.port;
    await acked('ClusterLoadAssignment', push());
    await until(
      'the route serves the cluster',
      async () => (await getPath(port, '/later')).body === 'later',
      30_000,
    );
    // Each worker: new connections land on either.
    for (let i = 0; i < 6; i++) assert.equal((await getPath(port, '/later')).body, 'later');
  });

  it('an endpoint update moves the traffic with no failed request', async () => {
    state.endpoints.app = app2.port;
    await acked('ClusterLoadAssignment', push());
    await until(
      'the cluster has its new endpoint',
      async () => (await proxy.get('/clusters')).body.includes(`app::127.0.0.1:${app2.port}::`),
      30_000,
    );
    assert.doesNotMatch(
      (await proxy.get('/clusters')).body,
      new RegExp(`app::127\\.0\\.0\\.1:${app1.port}::`),
    );
  });

  it("a removed cluster's request in flight completes; new ones answer 503", async () => {
    const inFlight = getPath(port, '/slow');
    await until('the slow request reaches its upstream', async () => slow.waiting() === 1, 30_000);
    state.clusters = state.clusters.filter((c) => c !== 'slow');
    delete state.endpoints.slow;
    await acked('.Cluster', push());
    await until('the cluster is gone', async () => !(await clusterNames()).has('slow'), 30_000);
    assert.equal((await getPath(port, '/slow')).status, 503);
    slow.release();
    const { status, body } = await inFlight;
    assert.deepEqual({ status, body }, { status: 200, body: 'slow' });
  });

  it('a changed EDS cluster is applied with the endpoints it already has, serving on meanwhile', async () => {
    timeouts.app = '7s';
    await acked('.Cluster', push());
    const appTimeout = async () =>
      (
        JSON.parse((await proxy.get('/config_dump?resource=dynamic_active_clusters')).body) as {
          configs: Array<{ cluster: { name: string; connect_timeout?: string } }>;
        }
      ).configs.find((c) => c.cluster.name === 'app')?.cluster.connect_timeout;
    await until(
      'the new cluster settings in /config_dump',
      async () => (await appTimeout()) === '7s',
      30_000,
    );
    assert.equal((await getPath(port, '/')).body, 'app');
    assert.match((await proxy.get('/clusters')).body, new RegExp(`app::127\\.0\\.0\\.1:${app2.port}::`));
  });

  it('a cluster removed and added again serves again', async () => {
    state.clusters = state.clusters.filter((c) => c !== 'later');
    await acked('.Cluster', push());
    await until('later gone', async () => !(await clusterNames()).has('later'), 30_000);
    assert.equal((await getPath(port, '/later')).status, 503);
    state.clusters.push('later');
    await acked('.Cluster', push());
    await until('later serves again', async () => (await getPath(port, '/later')).body === 'later', 30_000);
  });

  it('a listener added and removed by LDS binds and unbinds while the first one serves on', async () => {
    state.listeners.push('extra');
    await acked('Listener', push());
    const extra = await proxy.listenerPort('extra');
    await until(
      'the new listener serves',
      () =>
        getPath(extra, '/').then(
          (r) => r.body === 'app',
          () => false,
        ),
      30_000,
    );
    state.listeners = ['ingress'];
    await acked('Listener', push());
    await until(
      'the listener is gone',
      async () => !(await proxy.get('/listeners')).body.includes('extra'),
      30_000,
    );
  });

  it('a changed listener and a changed route table take over under load with no failed request', async () => {
    state.bufferLimit = 65_536;
    await acked('.Listener', push());
    await until(
      'the changed listener in /config_dump',
      async () => (await proxy.get('/config_dump?resource=dynamic_listeners')).body.includes('65536'),
      30_000,
    );
    assert.equal(await proxy.listenerPort('ingress'), port, 'the same port');
    state.tableVersion = 'v2';
    await acked('RouteConfiguration', push());
    await until(
      'the changed table serves',
      () =>
        getPath(port, '/').then(
          (r) => r.headers['x-table'] === 'v2',
          () => false,
        ),
      30_000,
    );
    const okBefore = load.ok;
    await until('traffic on the changed listener', async () => load.ok > okBefore + 50, 30_000);
  });

  it('a listener changed to a route table it has not got yet keeps serving until the table arrives', async () => {
    // A changed listener was applied at once, before the route table it names had come by RDS
    // (subscribed only then): every request in that round trip was answered 404. It now waits,
    // like a listener waiting for its secrets, and the old one serves meanwhile.
    const statuses = await statusesWhile(port, async (seen) => {
      for (const table of ['ingress-routes-b', 'ingress-routes']) {
        state.ingressTable = table;
        const from = push();
        await acked('.Listener', from);
        await acked('RouteConfiguration', from);
        const before = seen.length;
        await until('requests after the switch', async () => seen.length > before + 20, 30_000);
      }
    });
    assert.deepEqual(
      statuses.filter((s) => s !== 200),
      [],
      'no request answered without routes',
    );
  });

  it('a cluster changed to endpoints it has not got yet serves on as it was until they arrive', async () => {
    const statuses = await statusesWhile(port, async (seen) => {
      state.serviceNames.app = 'app-v2';
      state.endpoints['app-v2'] = app1.port;
      const from = push();
      await acked('.Cluster', from);
      await acked('ClusterLoadAssignment', from);
      await until(
        'the cluster on its new endpoints',
        async () => (await proxy.get('/clusters')).body.includes(`app::127.0.0.1:${app1.port}::`),
        30_000,
      );
      const before = seen.length;
      await until('requests after the change', async () => seen.length > before + 20, 30_000);
    });
    assert.deepEqual(
      statuses.filter((s) => s !== 200),
      [],
      'no request without endpoints',
    );
  });

  it('serves on while the management server is down, then resubscribes with the versions it holds', async () => {
    const cpPort = cp.port;
    await cp.stop();
    const okBefore = load.ok;
    await until('traffic while the server is down', async () => load.ok > okBefore + 50, 30_000);
    assert.equal((await getPath(port, '/later')).body, 'later');
    cp = await GoControlPlane.start(snapshot(), ['-legacy-wildcard=false', '-port', String(cpPort)]);
    // Wildcard streams are answered at once (with nothing); a by-name one whose versions all
    // match gets no answer from go-control-plane, so wait for each resubscription itself.
    await acked('.Listener', 0);
    for (const type of ['ClusterLoadAssignment', 'RouteConfiguration'])
      await cp.waitFor((l) => l.event === 'delta_request' && String(l.type_url).endsWith(type), 30_000);
    const firsts = cp.log.filter((l) => l.event === 'delta_request' && l.response_nonce === '');
    const held = (type: string) =>
      Object.keys(
        (firsts.find((l) => String(l.type_url).endsWith(type))?.initial_resource_versions ?? {}) as object,
      ).sort();
    assert.deepEqual(held('.Cluster'), ['app', 'later']);
    assert.deepEqual(held('ClusterLoadAssignment'), ['app-v2', 'later']);
    assert.deepEqual(held('.Listener'), ['ingress']);
    assert.deepEqual(held('RouteConfiguration'), ['ingress-routes']);
    const resent = cp.log
      .filter((l) => l.event === 'delta_response')
      .flatMap((l) => ((l.resources as Array<{ name: string }> | null) ?? []).map((r) => r.name));
    assert.deepEqual(resent, [], 'nothing it holds is sent again');
    const result = await load.stop();
    assert.deepEqual(result.failed, []);
    assert.equal(result.refused, 0);
  });
});
