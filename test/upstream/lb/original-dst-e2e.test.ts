/**
 * ORIGINAL_DST end to end: the real `proxy` command, a cluster of type ORIGINAL_DST with
 * `use_http_header`, two upstreams on loopback named by `x-proxy-original-dst-host` /
 * `x-envoy-original-dst-host`, and the `cleanup_interval` sweep seen from the upstream
 * (its kept-alive connection is closed once nobody uses the destination).
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../../events/index.js';
import { parseDestination } from '../../../reducers/hosts.js';
import { hcmWithRoutes, httpListener, LOOPBACK_ADMIN } from '../../helpers/bootstraps.js';
import { until } from '../../helpers/dataplane.js';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';

interface Upstream {
  port: number;
  accepted: number;
  open: Set<Socket>;
  server: http.Server;
}

async function upstream(name: string): Promise<Upstream> {
  const server = http.createServer((_req, res) => res.end(name));
  // Longer than the test: only the proxy's sweep may close its connections.
  server.keepAliveTimeout = 60_000;
  const u: Upstream = { port: 0, accepted: 0, open: new Set(), server };
  server.on('connection', (socket: Socket) => {
    u.accepted++;
    u.open.add(socket);
    socket.on('close', () => u.open.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  u.port = (server.address() as AddressInfo).port;
  return u;
}

/** `cleanupIntervalS`: a sweep only drops a destination unused for that long, however loaded the machine. */
function bootstrap(cleanupIntervalS: number): JsonObject {
  return {
    admin: LOOPBACK_ADMIN,
    static_resources: {
      clusters: [
        {
          name: 'dst',
          type: 'ORIGINAL_DST',
          lb_policy: 'ORIGINAL_DST_LB',
          connect_timeout: '1s',
          cleanup_interval: `${cleanupIntervalS}s`,
          original_dst_lb_config: { use_http_header: true },
        },
      ],
      listeners: [httpListener(hcmWithRoutes([{ match: { prefix: '/' }, route: { cluster: 'dst' } }], 'in'))],
    },
  };
}

function get(port: number, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      { host: '127.0.0.1', port, path: '/', headers, agent: false, timeout: 5000 },
      (res) => {
        let body = '';
        res.on('data', (c) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
  });
}

describe('ORIGINAL_DST with use_http_header through the proxy', () => {
  let a: Upstream;
  let b: Upstream;
  let proxy: ProxyProcess;
  let port: number;

  before(async () => {
    a = await upstream('a');
    b = await upstream('b');
    // One worker, one pool per destination: connection counts are then exact. The interval
    // is long enough that a stalled test or proxy (a loaded machine) does not let a destination
    // in use go idle for a whole sweep period.
    proxy = await startProxyProcess(bootstrap(2), ['--concurrency', '1']);
    port = await proxy.listenerPort('http');
  });

  after(async () => {
    await proxy?.stop();
    for (const u of [a, b]) {
      u.server.closeAllConnections();
      u.server.close();
    }
  });

  it('warns at start-up that the header is not sanitized', () => {
    assert.match(
      proxy.stderr(),
      /original_dst_lb_config\.use_http_header: the x-proxy-original-dst-host .*not sanitized/,
    );
  });

  it('sends each request to the host its header names, in either spelling', async () => {
    assert.deepEqual(await get(port, { 'x-proxy-original-dst-host': `127.0.0.1:${a.port}` }), {
      status: 200,
      body: 'a',
    });
    assert.deepEqual(await get(port, { 'x-envoy-original-dst-host': `127.0.0.1:${b.port}` }), {
      status: 200,
      body: 'b',
    });
  });

  it('answers 503 without the header or with one that is not ip:port', async () => {
    assert.equal((await get(port, {})).status, 503);
    assert.equal((await get(port, { 'x-proxy-original-dst-host': 'example.com:80' })).status, 503);
    assert.equal((await get(port, { 'x-proxy-original-dst-host': '127.0.0.1' })).status, 503);
  });

  it('keeps a destination in use and drops one unused for cleanup_interval, closing its connections', async () => {
    await get(port, { 'x-proxy-original-dst-host': `127.0.0.1:${b.port}` });
    const acceptedByA = a.accepted;
    // Use a while b sits idle until a sweep drops b: that is the second sweep since b's last
    // use, so a too was marked unused by one and kept by the next because it was used.
    const deadline = Date.now() + 30_000;
    while (b.open.size > 0) {
      assert.ok(Date.now() < deadline, "b's idle connection closed by the sweep");
      assert.equal((await get(port, { 'x-proxy-original-dst-host': `127.0.0.1:${a.port}` })).body, 'a');
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(a.accepted, acceptedByA, 'a kept its pooled connection: it was never swept');
    assert.equal(a.open.size, 1);
    // A swept destination comes back on demand.
    assert.equal((await get(port, { 'x-proxy-original-dst-host': `127.0.0.1:${b.port}` })).body, 'b');
  });

  it('/clusters lists the destinations it created (the CLUSTER_PROVIDED hosts) with their counters', async () => {
    await get(port, { 'x-proxy-original-dst-host': `127.0.0.1:${a.port}` });
    const text = (await proxy.get('/clusters')).body;
    assert.match(text, new RegExp(`^dst::127\\.0\\.0\\.1:${a.port}::rq_total::[1-9]`, 'm'));
    assert.match(text, new RegExp(`^dst::127\\.0\\.0\\.1:${a.port}::health_flags::healthy$`, 'm'));
    const json = JSON.parse((await proxy.get('/clusters?format=json')).body) as {
      cluster_statuses: Array<{
        name: string;
        host_statuses?: Array<{ address: { socket_address: { port_value: number } } }>;
      }>;
    };
    const dst = json.cluster_statuses.find((c) => c.name === 'dst');
    assert.ok(dst?.host_statuses?.some((h) => h.address.socket_address.port_value === a.port));
  });
});

describe('ORIGINAL_DST destinations in /clusters with --concurrency 2', () => {
  let a: Upstream;
  let proxy: ProxyProcess;

  before(async () => {
    a = await upstream('a');
    // No sweep during the test: it would drop the destination and its counters.
    proxy = await startProxyProcess(bootstrap(3600), ['--concurrency', '2'], 60_000);
  });

  after(async () => {
    await proxy?.stop();
    a.server.closeAllConnections();
    a.server.close();
  });

  it('lists the destinations the workers created, their counters summed', async () => {
    const port = await proxy.listenerPort('http');
    for (let i = 0; i < 4; i++)
      assert.equal((await get(port, { 'x-proxy-original-dst-host': `127.0.0.1:${a.port}` })).body, 'a');
    // A worker that misses the admin's 1 s deadline is left out of one answer (a loaded
    // machine): ask until every request is counted, then the sum must be exact.
    const line = new RegExp(`^dst::127\\.0\\.0\\.1:${a.port}::rq_total::(\\d+)$`, 'm');
    let total = 0;
    await until(
      async () => {
        total = Number(line.exec((await proxy.get('/clusters')).body)?.[1] ?? 0);
        return total >= 4;
      },
      30_000,
      'the 4 requests counted in /clusters',
    );
    assert.equal(total, 4);
  });
});

describe('parseDestination', () => {
  it('takes literal IPv4 and bracketed IPv6 addresses with a port, nothing else', () => {
    assert.deepEqual(parseDestination('10.0.0.1:8080'), {
      address: '10.0.0.1:8080',
      ip: '10.0.0.1',
      port: 8080,
    });
    assert.deepEqual(parseDestination('[::1]:80'), { address: '[::1]:80', ip: '::1', port: 80 });
    for (const bad of ['10.0.0.1', 'host:80', '10.0.0.1:0', '10.0.0.1:70000', '::1:80', '', '[::1]'])
      assert.equal(parseDestination(bad), null, bad);
  });
});
