/**
 * Health end to end: the real `proxy` command, upstreams on loopback, requests through an
 * HTTP listener, verdicts read from `/clusters` and `/stats`.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as net from 'node:net';
import { test } from 'node:test';
import type { JsonObject } from '../../../events/index.js';
import { hcmWithRoutes, httpBootstrap } from '../../helpers/bootstraps.js';
import { cleanupsAfterAll } from '../../helpers/cleanups.js';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';
import { checkedCluster, fastCheck } from './helpers.js';

const cleanups = cleanupsAfterAll();

/** An upstream answering `/healthz` with `health` and anything else with `status`, counting both. */
interface Upstream {
  port: number;
  health: number;
  status: number;
  checks: number;
  requests: number;
  /** Answer requests with `x-proxy-immediate-health-check-fail`, as a failing upstream proxy does. */
  failHeader: boolean;
}

async function upstream(): Promise<Upstream> {
  const u: Upstream = { port: 0, health: 200, status: 200, checks: 0, requests: 0, failHeader: false };
  const server = http.createServer((req, res) => {
    if (req.url === '/healthz') {
      u.checks++;
      res.writeHead(u.health).end();
      return;
    }
    u.requests++;
    res
      .writeHead(u.status, u.failHeader ? { 'x-proxy-immediate-health-check-fail': 'true' } : {})
      .end(`from ${u.port}`);
  });
  server.keepAliveTimeout = 100;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  u.port = (server.address() as AddressInfo).port;
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return u;
}

function bootstrap(cluster: JsonObject): JsonObject {
  return httpBootstrap(
    [cluster],
    hcmWithRoutes([{ match: { prefix: '/' }, route: { cluster: 'web' } }], 'ingress'),
  );
}

async function start(
  cluster: JsonObject,
  args: string[] = [],
): Promise<{ proxy: ProxyProcess; port: number }> {
  const proxy = await startProxyProcess(bootstrap(cluster), args);
  cleanups.push(proxy.stop);
  return { proxy, port: await proxy.listenerPort('http') };
}

async function get(port: number): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${port}/x`);
  return { status: res.status, body: await res.text() };
}

async function flags(proxy: ProxyProcess, u: Upstream): Promise<string> {
  const text = (await proxy.get('/clusters')).body;
  return new RegExp(`^web::127\\.0\\.0\\.1:${u.port}::health_flags::(.*)$`, 'm').exec(text)?.[1] ?? '?';
}

/** Polls an async condition every 25 ms until it holds; fails after `timeoutMs`. */
/** Polls until `check` holds; the deadline only matters on failure, so it allows a loaded machine. */
async function eventually(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

test('an active check failure takes the host out of traffic, /clusters shows /failed_active_hc, and it comes back', async () => {
  const a = await upstream();
  const b = await upstream();
  const { proxy, port } = await start(
    checkedCluster('web', [a.port, b.port], {
      health_checks: [fastCheck({ http_health_check: { path: '/healthz' } })],
    }),
  );
  // LIVE only after the first check of each member: both healthy from the first request on.
  assert.equal(await flags(proxy, a), 'healthy');
  assert.equal(await flags(proxy, b), 'healthy');
  b.health = 503;
  await eventually('b out', async () => (await flags(proxy, b)) === '/failed_active_hc');
  const before = b.requests;
  for (let i = 0; i < 10; i++) assert.equal((await get(port)).body, `from ${a.port}`);
  assert.equal(b.requests, before, 'no traffic to the failing host');
  b.health = 200;
  await eventually('b back', async () => (await flags(proxy, b)) === 'healthy');
  const stats = (await proxy.get('/stats?filter=^cluster\\.web\\.health_check\\.')).body;
  assert.match(stats, /cluster\.web\.health_check\.attempt: [1-9]/);
  assert.match(stats, /cluster\.web\.health_check\.failure: [1-9]/);
  assert.match(stats, /cluster\.web\.health_check\.healthy: 2/);
});

test('consecutive 5xx ejects the host (/failed_outlier_check), traffic moves, it returns after base_ejection_time; success-rate figures in /clusters', async () => {
  const hosts = [await upstream(), await upstream(), await upstream()];
  const [a] = hosts as [Upstream];
  const { proxy, port } = await start(
    checkedCluster(
      'web',
      hosts.map((h) => h.port),
      {
        outlier_detection: {
          consecutive_5xx: 3,
          interval: '0.2s',
          base_ejection_time: '0.6s',
          max_ejection_percent: 100,
          success_rate_minimum_hosts: 3,
          success_rate_request_volume: 3,
          enforcing_success_rate: 0,
        },
      },
    ),
  );
  const text = (await proxy.get('/clusters')).body;
  assert.match(text, /^web::outlier::success_rate_average::-1$/m);
  assert.match(text, /^web::outlier::success_rate_ejection_threshold::-1$/m);
  // Steady traffic with every host healthy: the interval's figures appear. The 12 requests go
  // at once so that each host gets its request volume inside one 0.2 s interval even on a
  // loaded machine, where 12 in a row may span several intervals.
  await eventually('success-rate figures', async () => {
    await Promise.all(Array.from({ length: 12 }, () => get(port)));
    const body = (await proxy.get('/clusters')).body;
    return /^web::outlier::success_rate_average::100$/m.test(body);
  });
  const body = (await proxy.get('/clusters')).body;
  assert.match(body, new RegExp(`^web::127\\.0\\.0\\.1:${a.port}::success_rate::100$`, 'm'));
  a.status = 500;
  await eventually('a ejected', async () => {
    await get(port);
    return (await flags(proxy, a)) === '/failed_outlier_check';
  });
  const ejectedAt = Date.now();
  const before = a.requests;
  for (let i = 0; i < 9; i++) assert.equal((await get(port)).status, 200);
  assert.equal(a.requests, before, 'no traffic to the ejected host');
  a.status = 200;
  await eventually('a back', async () => (await flags(proxy, a)) === 'healthy');
  assert.ok(Date.now() - ejectedAt >= 400, 'back only after base_ejection_time');
  const stats = (await proxy.get('/stats?filter=outlier_detection')).body;
  assert.match(stats, /cluster\.web\.outlier_detection\.ejections_enforced_consecutive_5xx: 1/);
  assert.match(stats, /cluster\.web\.outlier_detection\.ejections_active: 0/);
});

test('panic: with every host failing its checks traffic still flows to all (lb_healthy_panic); threshold 0 answers 503', async () => {
  for (const threshold of [50, 0]) {
    const a = await upstream();
    a.health = 500;
    const { proxy, port } = await start(
      checkedCluster('web', [a.port], {
        common_lb_config: { update_merge_window: '0s', healthy_panic_threshold: { value: threshold } },
        health_checks: [fastCheck({ http_health_check: { path: '/healthz' } })],
      }),
    );
    assert.equal(await flags(proxy, a), '/failed_active_hc');
    const res = await get(port);
    const panics = (await proxy.get('/stats?filter=^cluster\\.web\\.lb_healthy_panic$')).body.trim();
    if (threshold === 50) {
      assert.equal(res.status, 200);
      assert.equal(panics, 'cluster.web.lb_healthy_panic: 1');
    } else {
      assert.equal(res.status, 503);
      assert.match(res.body, /no healthy upstream/);
      assert.equal(panics, 'cluster.web.lb_healthy_panic: 0');
    }
  }
});

test('--concurrency 2: checks run once (the upstream counts them), workers see the verdicts and their 5xx reach the detector', async () => {
  const a = await upstream();
  const b = await upstream();
  const { proxy, port } = await start(
    checkedCluster('web', [a.port, b.port], {
      health_checks: [
        fastCheck(
          { http_health_check: { path: '/healthz' } },
          { interval: '0.1s', no_traffic_interval: '0.1s', unhealthy_threshold: 1 },
        ),
      ],
      outlier_detection: {
        consecutive_5xx: 3,
        interval: '0.2s',
        base_ejection_time: '30s',
        max_ejection_percent: 100,
      },
    }),
    ['--concurrency', '2'],
  );
  const from = a.checks;
  const started = Date.now();
  await new Promise((r) => setTimeout(r, 2000));
  const rate = ((a.checks - from) * 1000) / (Date.now() - started);
  // A loaded machine runs timers late, so only the ceiling is sharp: one checker per worker
  // would make about 20 a second; fewer than 10 only means the timers ran late.
  assert.ok(
    rate > 0 && rate <= 13,
    `${rate.toFixed(1)} checks/s at a 100 ms interval: one checker, not one per worker`,
  );
  b.health = 503;
  await eventually('b out', async () => (await flags(proxy, b)) === '/failed_active_hc');
  // Both workers must leave b alone: 20 requests spread over them by the kernel.
  const before = b.requests;
  await Promise.all(Array.from({ length: 20 }, () => get(port)));
  assert.equal(b.requests, before);
  b.health = 200;
  await eventually('b back', async () => (await flags(proxy, b)) === 'healthy');
  a.status = 502;
  await eventually('a ejected from worker outcomes', async () => {
    await Promise.all(Array.from({ length: 4 }, () => get(port)));
    return (await flags(proxy, a)) === '/failed_outlier_check';
  });
});

test('close_connections_on_host_health_failure: a TCP proxy connection to a host that fails its check is closed', async () => {
  let answer = true;
  const server = net.createServer((socket) => {
    socket.on('error', () => {});
    socket.on('data', (d) => {
      if (d.toString() === 'PING') {
        if (answer) socket.write('PONG');
      } else socket.write(d);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const upstreamPort = (server.address() as AddressInfo).port;
  const hex = (s: string) => Buffer.from(s).toString('hex');
  const proxy = await startProxyProcess({
    admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
    static_resources: {
      clusters: [
        checkedCluster('echo', [upstreamPort], {
          close_connections_on_host_health_failure: true,
          health_checks: [
            fastCheck(
              { tcp_health_check: { send: { text: hex('PING') }, receive: [{ text: hex('PONG') }] } },
              // 1 s, not 0.1 s: at load in CI a 0.1 s check could fail the host before the
              // client connected, and no failure came after to close the connection.
              { timeout: '1s', unhealthy_threshold: 1 },
            ),
          ],
        }),
      ],
      listeners: [
        {
          name: 'tcp',
          address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
          filter_chains: [
            {
              filters: [
                {
                  name: 'proxy.filters.network.tcp_proxy',
                  typed_config: {
                    '@type': 'type.googleapis.com/envoy.config.filter.network.tcp_proxy.v2.TcpProxy',
                    stat_prefix: 'echo',
                    cluster: 'echo',
                  },
                },
              ],
            },
          ],
        },
      ],
    },
  });
  cleanups.push(proxy.stop);
  const client = net.connect(await proxy.listenerPort('tcp'), '127.0.0.1');
  const closed = new Promise<number>((resolve) => client.once('close', () => resolve(Date.now())));
  client.on('error', () => {});
  const echoed = await new Promise<string>((resolve) => {
    client.once('data', (d) => resolve(d.toString()));
    client.write('hello');
  });
  assert.equal(echoed, 'hello');
  answer = false;
  const failedAt = Date.now();
  // Nothing else closes it (tcp_proxy's idle timeout is an hour): the bounds allow for load.
  const at = await Promise.race([closed, new Promise<number>((r) => setTimeout(() => r(-1), 10_000))]);
  assert.ok(at > 0, 'the proxied connection was closed');
  assert.ok(at - failedAt < 8000);
});

test('an answer carrying x-proxy-immediate-health-check-fail fails the host at once (passive_failure); its checks bring it back', async () => {
  const a = await upstream();
  const b = await upstream();
  const { proxy, port } = await start(
    checkedCluster('web', [a.port, b.port], {
      health_checks: [
        fastCheck(
          { http_health_check: { path: '/healthz' } },
          { interval: '0.3s', no_traffic_interval: '0.3s' },
        ),
      ],
    }),
  );
  a.status = 503;
  a.failHeader = true;
  await eventually('a failed passively', async () => {
    await get(port);
    return (await flags(proxy, a)) === '/failed_active_hc';
  });
  const stats = (await proxy.get('/stats?filter=^cluster\\.web\\.health_check\\.passive_failure$')).body;
  assert.match(stats, /passive_failure: [1-9]/);
  a.status = 200;
  a.failHeader = false;
  await eventually(
    'a back after healthy_threshold passes',
    async () => (await flags(proxy, a)) === 'healthy',
  );
});
