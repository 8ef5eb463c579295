/**
 * LDS and RDS on per-type gRPC streams: a discovered listener binds, its route table comes
 * from RDS and is swapped whole under traffic, a changed listener keeps its port, a bad one
 * is NACKed while the rest serve, a removed one stops accepting and drains.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../../events/index.js';
import { prepareHashing } from '../../../src/upstream/hash.js';
import { versionHash } from '../../../src/edges/xds/version-hash.js';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';
import {
  ADMIN,
  GRPC_SOURCE,
  get,
  httpListener,
  staticCluster,
  statValue,
  until,
} from '../../helpers/xds-fixtures.js';
import { XdsServer } from '../../helpers/xds-server.js';

const HCM =
  'type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager';

function listener(name: string, routes: JsonObject): JsonObject {
  return {
    name,
    address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
    filter_chains: [
      {
        filters: [
          {
            name: 'envoy.http_connection_manager',
            typed_config: {
              '@type': HCM,
              stat_prefix: name,
              ...routes,
              http_filters: [{ name: 'envoy.router' }],
            },
          },
        ],
      },
    ],
  };
}

const rds = (name: string) => ({ rds: { route_config_name: name, config_source: GRPC_SOURCE } });

function table(name: string, status: number, body: string): JsonObject {
  return {
    name,
    virtual_hosts: [
      {
        name: 'all',
        domains: ['*'],
        routes: [{ match: { prefix: '/' }, direct_response: { status, body: { inline_string: body } } }],
      },
    ],
  };
}

async function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

describe('LDS and RDS (per-type gRPC services)', () => {
  let xds: XdsServer;
  let proxy: ProxyProcess;

  before(async () => {
    await prepareHashing();
    xds = await XdsServer.start();
    xds.set('lds', [listener('front', rds('front_routes'))], 'l1');
    xds.set('rds', [table('front_routes', 200, 'one')], 'r1');
    proxy = await startProxyProcess(
      {
        admin: ADMIN,
        dynamic_resources: { lds_config: GRPC_SOURCE },
        static_resources: { clusters: [staticCluster('xds_cluster', [xds.port], true)] },
      },
      ['--concurrency', '1', '--drain-time-s', '1'],
    );
  });

  after(async () => {
    await proxy?.stop();
    await xds?.stop();
  });

  it('binds a discovered listener whose routes come from RDS', async () => {
    const lds = await xds.ack('lds', 'l1');
    assert.equal(lds.method, '/envoy.api.v2.ListenerDiscoveryService/StreamListeners');
    const rdsAck = await xds.ack('rds', 'r1');
    assert.equal(rdsAck.method, '/envoy.api.v2.RouteDiscoveryService/StreamRoutes');
    assert.deepEqual(rdsAck.resource_names, ['front_routes']);
    const port = await proxy.listenerPort('front');
    const res = await get(port);
    assert.deepEqual(res, { status: 200, body: 'one' });
    const stats = (await proxy.get('/stats?filter=rds')).body;
    assert.match(stats, /http\.front\.rds\.front_routes\.update_success: 1/);
    assert.equal(await statValue(proxy, 'http.front.rds.front_routes.version'), versionHash('r1'));
    assert.equal(await statValue(proxy, 'listener_manager.lds.version'), versionHash('l1'));
    const dump = JSON.parse((await proxy.get('/config_dump')).body) as { configs: JsonObject[] };
    const listeners = dump.configs.find((c) =>
      String(c['@type']).endsWith('ListenersConfigDump'),
    ) as JsonObject;
    assert.equal(listeners.version_info, 'l1');
    const dynamic = listeners.dynamic_listeners as Array<{
      name: string;
      active_state: { version_info: string };
    }>;
    assert.deepEqual(
      dynamic.map((l) => [l.name, l.active_state.version_info]),
      [['front', 'l1']],
    );
    const routes = dump.configs.find((c) => String(c['@type']).endsWith('.RoutesConfigDump')) as JsonObject;
    const tables = routes.dynamic_route_configs as Array<{
      version_info: string;
      route_config: { name: string };
    }>;
    assert.deepEqual(
      tables.map((t) => [t.route_config.name, t.version_info]),
      [['front_routes', 'r1']],
    );
  });

  it('swaps the route table atomically under traffic: no failed request, then only the new answer', async () => {
    const port = await proxy.listenerPort('front');
    let failures = 0;
    let running = true;
    const bodies: string[] = [];
    const load = (async () => {
      while (running) {
        const res = await get(port).catch(() => ({ status: 0, body: '' }));
        if (res.status !== 200) failures++;
        bodies.push(res.body);
      }
    })();
    await new Promise((r) => setTimeout(r, 100));
    xds.set('rds', [table('front_routes', 200, 'two')], 'r2');
    await xds.ack('rds', 'r2');
    await until('the new table', async () => bodies.at(-1) === 'two');
    await new Promise((r) => setTimeout(r, 100));
    running = false;
    await load;
    assert.equal(failures, 0);
    assert.equal(await statValue(proxy, 'http.front.rds.front_routes.version'), versionHash('r2'));
    const firstTwo = bodies.indexOf('two');
    assert.ok(firstTwo > 0);
    assert.ok(
      bodies.slice(firstTwo).every((b) => b === 'two'),
      'once the new table answers, the old never does',
    );
  });

  it('NACKs a bad listener naming the field while the others keep serving', async () => {
    const from = xds.requests.length;
    const { address: _, ...bad } = listener('bad', rds('front_routes'));
    xds.set('lds', [listener('front', rds('front_routes')), bad], 'l2');
    const nack = await xds.nack('lds', 10_000, from);
    assert.equal(nack.version_info, 'l1');
    assert.match(nack.error_detail?.message ?? '', /Listener 'bad': address: required field missing/);
    assert.equal((await get(await proxy.listenerPort('front'))).body, 'two');
    assert.match((await proxy.get('/stats?filter=^listener_manager.lds')).body, /lds\.update_rejected: 1/);
    assert.equal(
      await statValue(proxy, 'listener_manager.lds.version'),
      versionHash('l1'),
      'a NACKed update leaves the version of the last accepted one',
    );
    const dump = JSON.parse((await proxy.get('/config_dump?resource=dynamic_listeners')).body) as {
      configs: Array<{ name: string; error_state?: { details: string; version_info: string } }>;
    };
    const failed = dump.configs.find((l) => l.name === 'bad');
    assert.equal(failed?.error_state?.version_info, 'l2');
    assert.match(failed?.error_state?.details ?? '', /address: required field missing/);
  });

  it('a listener whose port is taken is NACKed with the bind error and not added; the others serve', async () => {
    // Root cause of the first version: the bind happened after the response was judged and
    // ACKed, so the management server was told a listener that never served was applied. The
    // reference binds before it answers; src/edges/xds/listener-binds.ts now waits for the bind.
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const taken = (blocker.address() as net.AddressInfo).port;
    try {
      const front = await proxy.listenerPort('front');
      const busy = {
        ...listener('busy', rds('front_routes')),
        address: { socket_address: { address: '127.0.0.1', port_value: taken } },
      };
      const from = xds.requests.length;
      xds.set('lds', [listener('front', rds('front_routes')), busy], 'l2b');
      const nack = await xds.nack('lds', 10_000, from);
      assert.equal(nack.version_info, 'l1');
      assert.match(
        nack.error_detail?.message ?? '',
        new RegExp(`cannot bind 127\\.0\\.0\\.1:${taken}: EADDRINUSE`),
      );
      const listed = (await proxy.get('/listeners')).body;
      assert.doesNotMatch(listed, /busy/, listed);
      const dump = JSON.parse((await proxy.get('/config_dump?resource=dynamic_listeners')).body) as {
        configs: Array<{
          name: string;
          active_state?: unknown;
          error_state?: { details: string; version_info: string };
        }>;
      };
      const failed = dump.configs.find((l) => l.name === 'busy');
      assert.equal(failed?.active_state, undefined);
      assert.equal(failed?.error_state?.version_info, 'l2b');
      assert.match(failed?.error_state?.details ?? '', /EADDRINUSE/);
      assert.equal((await get(front)).body, 'two');
    } finally {
      blocker.close();
    }
  });

  it('updates a listener in place on its port, then removes it: the port closes', async () => {
    const port = await proxy.listenerPort('front');
    xds.set('lds', [listener('front', { route_config: table('inline', 203, 'inline') })], 'l3');
    await xds.ack('lds', 'l3');
    // Old keep-alive connections drain (closed after their request): a retry is a new connection.
    await until('the updated listener', async () => (await get(port).catch(() => null))?.status === 203);
    assert.equal(await proxy.listenerPort('front'), port, 'the same port');
    xds.set('lds', [], 'l4');
    await xds.ack('lds', 'l4');
    await until('the port closed', () => refused(port));
    await until(
      'front gone from /listeners',
      async () => !(await proxy.get('/listeners')).body.includes('front'),
    );
  });
});

describe('a listener removed by LDS with a request in flight', () => {
  it('stops accepting at once and lets the request in flight finish', async () => {
    const slow = http.createServer((_req, res) => {
      setTimeout(() => res.end('slow'), 600);
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    const slowPort = (slow.address() as net.AddressInfo).port;
    const xds = await XdsServer.start();
    xds.set('lds', [httpListener('edge', 'slow')], 'l1');
    const proxy = await startProxyProcess(
      {
        admin: ADMIN,
        dynamic_resources: { lds_config: GRPC_SOURCE },
        static_resources: {
          clusters: [staticCluster('xds_cluster', [xds.port], true), staticCluster('slow', [slowPort])],
        },
      },
      ['--concurrency', '1', '--drain-time-s', '5'],
    );
    try {
      const port = await proxy.listenerPort('edge');
      const inFlight = get(port);
      await new Promise((r) => setTimeout(r, 150));
      xds.set('lds', [], 'l2');
      await xds.ack('lds', 'l2');
      await until('the port closed', () => refused(port));
      assert.deepEqual(await inFlight, { status: 200, body: 'slow' });
    } finally {
      await proxy.stop();
      await xds.stop();
      slow.closeAllConnections();
      slow.close();
    }
  });
});
