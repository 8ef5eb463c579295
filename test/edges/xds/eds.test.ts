/**
 * EDS over gRPC against the test management server: the proxy subscribes, ACKs, serves the
 * discovered members, NACKs a bad update naming resource and field while it keeps serving,
 * replaces members under traffic without a failed request, and reconnects to a restarted server.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { prepareHashing } from '../../../src/upstream/hash.js';
import { versionHash } from '../../../src/edges/xds/version-hash.js';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';
import {
  assignment,
  edsBootstrap,
  GRPC_SOURCE,
  get,
  statValue,
  type Upstream,
  until,
  upstream,
} from '../../helpers/xds-fixtures.js';
import { XdsServer } from '../../helpers/xds-server.js';

describe('EDS over gRPC (EndpointDiscoveryService)', () => {
  let xds: XdsServer;
  let proxy: ProxyProcess;
  let port: number;
  const upstreams: Upstream[] = [];

  before(async () => {
    await prepareHashing();
    xds = await XdsServer.start();
    for (const name of ['a', 'b', 'c', 'd']) upstreams.push(await upstream(name));
    xds.set('eds', [assignment('some_service', [upstreams[0]!.port, upstreams[1]!.port])], 'v1');
    proxy = await startProxyProcess(edsBootstrap(xds.port, GRPC_SOURCE), ['--concurrency', '1']);
    port = await proxy.listenerPort('listener_0');
  });

  after(async () => {
    await proxy?.stop();
    await xds?.stop();
    await Promise.all(upstreams.map((u) => u.close()));
  });

  it('subscribes by name, ACKs, and serves the discovered members', async () => {
    const ack = await xds.ack('eds', 'v1');
    assert.deepEqual(ack.resource_names, ['some_service']);
    assert.equal(ack.method, '/envoy.api.v2.EndpointDiscoveryService/StreamEndpoints');
    assert.ok(ack.node, 'the first request carries the node');
    const bodies = new Set<string>();
    for (let i = 0; i < 10; i++) {
      const res = await get(port);
      assert.equal(res.status, 200);
      bodies.add(res.body);
    }
    assert.deepEqual([...bodies].sort(), ['a', 'b']);
    const clusters = (await proxy.get('/clusters')).body;
    assert.match(clusters, new RegExp(`some_service::127\\.0\\.0\\.1:${upstreams[0]!.port}::cx_active`));
    const stats = (await proxy.get('/stats?filter=some_service.update_')).body;
    assert.match(stats, /cluster\.some_service\.update_success: [1-9]/);
    assert.equal(await statValue(proxy, 'cluster.some_service.version'), versionHash('v1'));
  });

  it('replaces members under steady traffic with zero failed requests', async () => {
    let failures = 0;
    let total = 0;
    const seen = new Set<string>();
    let running = true;
    const load = (async () => {
      while (running) {
        const res = await get(port).catch(() => ({ status: 0, body: '' }));
        total++;
        if (res.status !== 200) failures++;
        else seen.add(res.body);
      }
    })();
    await new Promise((r) => setTimeout(r, 200));
    xds.set('eds', [assignment('some_service', [upstreams[2]!.port, upstreams[3]!.port])], 'v2');
    await xds.ack('eds', 'v2');
    await until('traffic on the new members', async () => seen.has('c') && seen.has('d'));
    seen.clear();
    await new Promise((r) => setTimeout(r, 300));
    running = false;
    await load;
    assert.equal(failures, 0, `${failures} of ${total} requests failed`);
    assert.deepEqual([...seen].sort(), ['c', 'd'], 'only the new members serve after the update');
    assert.equal(await statValue(proxy, 'cluster.some_service.version'), versionHash('v2'));
  });

  it('NACKs a bad update naming resource and field, and keeps serving the last good members', async () => {
    const from = xds.requests.length;
    xds.set(
      'eds',
      [assignment('some_service', [upstreams[0]!.port], { load_balancing_weight: 0 })],
      'v3-bad',
    );
    const nack = await xds.nack('eds', 10_000, from);
    assert.equal(nack.version_info, 'v2', 'a NACK carries the last accepted version');
    assert.match(
      nack.error_detail?.message ?? '',
      /ClusterLoadAssignment 'some_service': endpoints\[0\]\.lb_endpoints\[0\]\.load_balancing_weight: must be >= 1/,
    );
    for (let i = 0; i < 6; i++) {
      const res = await get(port);
      assert.equal(res.status, 200);
      assert.ok(['c', 'd'].includes(res.body), res.body);
    }
    const stats = (await proxy.get('/stats?filter=some_service.update_rejected')).body;
    assert.match(stats, /cluster\.some_service\.update_rejected: 1/);
    assert.equal(
      await statValue(proxy, 'cluster.some_service.version'),
      versionHash('v2'),
      'a NACKed update leaves the version of the last accepted one',
    );
  });
});

describe('EDS on ADS when the management server dies and comes back', () => {
  it('keeps serving the last members, reconnects, re-subscribes and picks up changes', async () => {
    let xds = await XdsServer.start();
    const a = await upstream('a');
    const b = await upstream('b');
    xds.set('eds', [assignment('some_service', [a.port])], 'v1');
    const bootstrap = edsBootstrap(
      xds.port,
      { ads: {} },
      {
        dynamic_resources: {
          ads_config: { api_type: 'GRPC', grpc_services: [{ envoy_grpc: { cluster_name: 'xds_cluster' } }] },
        },
      },
    );
    const proxy = await startProxyProcess(bootstrap, ['--concurrency', '1']);
    try {
      const port = await proxy.listenerPort('listener_0');
      const first = await xds.ack('eds', 'v1');
      assert.equal(
        first.method,
        '/envoy.service.discovery.v2.AggregatedDiscoveryService/StreamAggregatedResources',
      );
      assert.equal((await get(port)).body, 'a');
      await until('connected_state 1', async () =>
        /control_plane\.connected_state: 1/.test((await proxy.get('/stats?filter=connected_state')).body),
      );
      const xdsPort = xds.port;
      await xds.stop();
      await until('connected_state 0', async () =>
        /control_plane\.connected_state: 0/.test((await proxy.get('/stats?filter=connected_state')).body),
      );
      for (let i = 0; i < 5; i++) assert.equal((await get(port)).body, 'a', 'the last members keep serving');
      assert.ok(
        ((await statValue(proxy, 'cluster.some_service.update_failure')) ?? 0) >= 1,
        'the broken stream is a failed fetch of the cluster it carried',
      );
      xds = await XdsServer.start(xdsPort);
      xds.set('eds', [assignment('some_service', [b.port])], 'v2');
      const resubscribe = await xds.waitFor(
        (r) => r.response_nonce === '' && r.type_url.endsWith('ClusterLoadAssignment'),
      );
      assert.equal(resubscribe.version_info, 'v1', 'the re-subscription says what it has');
      assert.deepEqual(resubscribe.resource_names, ['some_service']);
      await xds.ack('eds', 'v2');
      await until('traffic on the new member', async () => (await get(port)).body === 'b');
    } finally {
      await proxy.stop();
      await xds.stop();
      await a.close();
      await b.close();
    }
  });
});

describe('EDS with --concurrency 2', () => {
  it('subscribes once, in the primary, and every worker serves each update', async () => {
    const xds = await XdsServer.start();
    const a = await upstream('a');
    const b = await upstream('b');
    xds.set('eds', [assignment('some_service', [a.port])], 'v1');
    const proxy = await startProxyProcess(edsBootstrap(xds.port, GRPC_SOURCE), ['--concurrency', '2']);
    try {
      const port = await proxy.listenerPort('listener_0');
      await xds.ack('eds', 'v1');
      assert.equal(xds.streams, 1, 'one stream: the workers do not subscribe');
      // Fresh connections each time, so the kernel spreads them over both workers.
      const bodies = async () => {
        const out = new Set<string>();
        for (let i = 0; i < 20; i++) {
          const res = await fetch(`http://127.0.0.1:${port}/`, { headers: { connection: 'close' } });
          out.add(await res.text());
        }
        return [...out].sort();
      };
      assert.deepEqual(await bodies(), ['a']);
      xds.set('eds', [assignment('some_service', [b.port])], 'v2');
      await xds.ack('eds', 'v2');
      await until('every worker on the new member', async () => (await bodies()).join() === 'b');
      const stats = (await proxy.get('/stats?filter=some_service.update_success')).body;
      assert.match(stats, /cluster\.some_service\.update_success: 2$/m, 'counted once, in the primary');
    } finally {
      await proxy.stop();
      await xds.stop();
      await a.close();
      await b.close();
    }
  });
});

describe('initialisation with a silent management server', () => {
  it('goes LIVE only when initial_fetch_timeout has passed, then serves what arrives later', async () => {
    const xds = await XdsServer.start();
    const a = await upstream('a');
    const started = Date.now();
    const proxy = await startProxyProcess(
      edsBootstrap(xds.port, { ...GRPC_SOURCE, initial_fetch_timeout: '1.500s' }),
      ['--concurrency', '1'],
    );
    try {
      assert.ok(Date.now() - started >= 1500, 'not LIVE before the initial fetch timed out');
      await xds.waitFor((r) => r.resource_names.includes('some_service'));
      const port = await proxy.listenerPort('listener_0');
      assert.equal((await get(port)).status, 503, 'no member yet');
      assert.match((await proxy.get('/init_dump')).body, /cluster some_service/);
      xds.set('eds', [assignment('some_service', [a.port])], 'v1');
      await xds.ack('eds', 'v1');
      await until('the late member serves', async () => (await get(port)).body === 'a');
      assert.equal((await proxy.get('/init_dump')).body.trim(), '{}');
    } finally {
      await proxy.stop();
      await xds.stop();
      await a.close();
    }
  });
});

describe('EDS on the v3 per-type service', () => {
  it('speaks envoy.service.endpoint.v3 with v3 type URLs', async () => {
    const xds = await XdsServer.start();
    const a = await upstream('a');
    xds.set('eds', [assignment('some_service', [a.port])], 'v1');
    const source = {
      api_config_source: {
        api_type: 'GRPC',
        transport_api_version: 'V3',
        grpc_services: [{ envoy_grpc: { cluster_name: 'xds_cluster' } }],
      },
      resource_api_version: 'V3',
    };
    const proxy = await startProxyProcess(edsBootstrap(xds.port, source), ['--concurrency', '1']);
    try {
      const ack = await xds.ack('eds', 'v1');
      assert.equal(ack.method, '/envoy.service.endpoint.v3.EndpointDiscoveryService/StreamEndpoints');
      assert.equal(ack.type_url, 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment');
      assert.equal((await get(await proxy.listenerPort('listener_0'))).body, 'a');
    } finally {
      await proxy.stop();
      await xds.stop();
      await a.close();
    }
  });
});
