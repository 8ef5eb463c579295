/**
 * The reference's runtime connection limits (the edge best-practice bootstrap sets both in its
 * static layer) were stored but not enforced. Over a limit a new connection is closed at once
 * and counted; `/runtime_modify` applies to the next connection; with `--concurrency 2` each
 * worker enforces its share, so the process never holds more than the limit.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, test } from 'node:test';
import fc from 'fast-check';
import type { JsonObject } from '../../../events/index.js';
import { shareOf } from '../../../src/dataplane/listeners/limits.js';
import { hcmWithRoutes, httpBootstrap } from '../../helpers/bootstraps.js';
import { SETTLE_MS, settle } from '../../helpers/dataplane.js';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';

const open: net.Socket[] = [];
const cleanups: Array<() => Promise<void>> = [];
after(async () => {
  for (const s of open) s.destroy();
  for (const c of cleanups.reverse()) await c();
});

test('shares: the workers together hold exactly the limit, no two differing by more than one', () => {
  fc.assert(
    fc.property(fc.nat(100_000), fc.integer({ min: 1, max: 64 }), (limit, of) => {
      const shares = Array.from({ length: of }, (_, index) => shareOf(limit, { index, of }));
      assert.equal(
        shares.reduce((a, b) => a + b, 0),
        limit,
      );
      assert.ok(Math.max(...shares) - Math.min(...shares) <= 1);
    }),
    { seed: 7, numRuns: 200 },
  );
});

function bootstrap(runtime: JsonObject): JsonObject {
  return {
    ...httpBootstrap(
      [],
      hcmWithRoutes([
        { match: { prefix: '/' }, direct_response: { status: 200, body: { inline_string: 'ok' } } },
      ]),
    ),
    layered_runtime: {
      layers: [
        { name: 'static', static_layer: runtime },
        { name: 'admin', admin_layer: {} },
      ],
    },
  };
}

/**
 * Opens a connection and asks for `/` on it: true when answered (it stays open, counted),
 * false when the proxy closed it unanswered.
 */
function attempt(port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    open.push(socket);
    const timer = setTimeout(() => reject(new Error('neither answered nor closed within 5 s')), 5000);
    const settle = (accepted: boolean) => {
      clearTimeout(timer);
      resolve(accepted);
    };
    socket.on('error', () => {});
    socket.once('data', (d) => settle(d.toString().startsWith('HTTP/1.1 200')));
    socket.once('close', () => settle(false));
    socket.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n');
  });
}

async function attempts(port: number, n: number): Promise<boolean[]> {
  const out: boolean[] = [];
  for (let i = 0; i < n; i++) out.push(await attempt(port));
  return out;
}

/** A counter summed over every listener (and, merged by `/stats`, every worker). */
async function counter(proxy: ProxyProcess, name: string): Promise<number> {
  const res = await proxy.get(`/stats?filter=^listener\\..*\\.${name}$`);
  return [...res.body.matchAll(/: (\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
}

/** Sets runtime values; the `/stats` that follows is answered by each worker after it folded them. */
async function modify(proxy: ProxyProcess, query: string): Promise<void> {
  assert.equal((await proxy.post(`/runtime_modify?${query}`)).status, 200);
  await proxy.get('/stats?filter=^server\\.live$');
}

test('--concurrency 1: the listener limit, then the global one, refuse and count; /runtime_modify raises them', async () => {
  const proxy = await startProxyProcess(
    bootstrap({
      envoy: { resource_limits: { listener: { http: { connection_limit: 2 } } } },
      overload: { global_downstream_max_connections: 100 },
    }),
    ['--concurrency', '1'],
  );
  cleanups.push(proxy.stop);
  const port = await proxy.listenerPort('http');

  assert.deepEqual(await attempts(port, 3), [true, true, false]);
  assert.equal(await counter(proxy, 'downstream_cx_overflow'), 1);
  assert.equal(await counter(proxy, 'downstream_global_cx_overflow'), 0);
  assert.equal(await counter(proxy, 'downstream_cx_total'), 2);

  // The proxy.* spelling wins over envoy.*; the global limit now refuses first.
  await modify(
    proxy,
    'proxy.resource_limits.listener.http.connection_limit=5&overload.global_downstream_max_connections=2',
  );
  assert.deepEqual(await attempts(port, 1), [false]);
  assert.equal(await counter(proxy, 'downstream_global_cx_overflow'), 1);
  assert.equal(await counter(proxy, 'downstream_cx_overflow'), 1);

  await modify(proxy, 'overload.global_downstream_max_connections=10');
  assert.deepEqual(await attempts(port, 4), [true, true, true, false]);
  assert.equal(await counter(proxy, 'downstream_cx_overflow'), 2);

  // A closed connection gives its place back.
  open.shift()?.destroy();
  const deadline = Date.now() + 5000;
  while ((await counter(proxy, 'downstream_cx_destroy')) < 1) {
    assert.ok(Date.now() < deadline, 'the closed connection was not counted closed within 5 s');
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.deepEqual(await attempts(port, 1), [true]);
});

test('--concurrency 2: each worker holds its share, never more than the limit in all; raised through /runtime_modify', async () => {
  const proxy = await startProxyProcess(
    bootstrap({ envoy: { resource_limits: { listener: { http: { connection_limit: 2 } } } } }),
    ['--concurrency', '2'],
  );
  cleanups.push(proxy.stop);
  const port = await proxy.listenerPort('http');

  // One each: the kernel chooses the worker, so a second may land on the full one.
  const first = await attempts(port, 4);
  const accepted = first.filter(Boolean).length;
  assert.ok(accepted >= 1 && accepted <= 2, JSON.stringify(first));
  const settled = (name: string, want: number) => settle(() => counter(proxy, name), want, SETTLE_MS);
  assert.equal(await settled('downstream_cx_overflow', 4 - accepted), 4 - accepted);

  await modify(proxy, 'overload.global_downstream_max_connections=0');
  assert.deepEqual(await attempts(port, 3), [false, false, false]);
  assert.equal(await settled('downstream_global_cx_overflow', 3), 3);

  // Shares of 10 (5 each) and no global limit: four more fit whichever worker takes them.
  await modify(
    proxy,
    'envoy.resource_limits.listener.http.connection_limit=10&overload.global_downstream_max_connections=',
  );
  assert.deepEqual(await attempts(port, 4), [true, true, true, true]);
  assert.equal(await settled('downstream_cx_total', accepted + 4), accepted + 4);
});

test("the overload manager's global_downstream_max_connections monitor (Istio's and Envoy Gateway's bootstraps) limits every listener but those exempt", async () => {
  const base = bootstrap({ overload: { global_downstream_max_connections: 100 } });
  const listeners = (base.static_resources as { listeners: JsonObject[] }).listeners;
  const http = listeners[0] as JsonObject;
  listeners.push(
    { ...http, name: 'ignores', ignore_global_conn_limit: true },
    { ...http, name: 'bypasses', bypass_overload_manager: true },
  );
  const proxy = await startProxyProcess(
    {
      ...base,
      overload_manager: {
        refresh_interval: '0.25s',
        resource_monitors: [
          {
            name: 'envoy.resource_monitors.global_downstream_max_connections',
            typed_config: {
              '@type':
                'type.googleapis.com/envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig',
              max_active_downstream_connections: 2,
            },
          },
        ],
      },
    },
    ['--concurrency', '1'],
  );
  cleanups.push(proxy.stop);
  // The monitor's 2 wins over the runtime key's 100, as in the reference.
  assert.deepEqual(await attempts(await proxy.listenerPort('http'), 3), [true, true, false]);
  assert.equal(await counter(proxy, 'downstream_global_cx_overflow'), 1);
  // Exempt listeners neither meet the limit nor count in it.
  assert.deepEqual(await attempts(await proxy.listenerPort('ignores'), 3), [true, true, true]);
  assert.deepEqual(await attempts(await proxy.listenerPort('bypasses'), 3), [true, true, true]);
  assert.deepEqual(await attempts(await proxy.listenerPort('http'), 1), [false]);
  assert.equal(await counter(proxy, 'downstream_global_cx_overflow'), 2);
});
