import assert from 'node:assert/strict';
import * as http from 'node:http';
import type * as net from 'node:net';
import { after, before, test } from 'node:test';
import { Report } from '../../../src/bootstrap/report.js';
import { findRoute } from '../../../src/dataplane/router/lookup.js';
import { compileRouteTable } from '../../../src/dataplane/router/table.js';
import { hcmConfig, type TestProxy, withTestProxy } from '../../helpers/http-dataplane.js';

// RouteAction.idle_timeout was refused: the edge best-practice bootstrap sets it (15 s) to
// bound a stream per route below the connection manager's stream_idle_timeout. Once a
// request is routed, the route's value replaces the HCM's; 0 disables it for that route.

let upstream: http.Server;
let upPort = 0;

before(async () => {
  upstream = http.createServer((req, res) => {
    if (req.url === '/hang') return;
    if (req.url?.startsWith('/slow')) return void setTimeout(() => res.end('slow'), 400);
    res.end('ok');
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  upPort = (upstream.address() as net.AddressInfo).port;
});

after(() => {
  upstream.close();
  upstream.closeAllConnections();
});

async function withProxy(
  hcmExtra: Record<string, unknown>,
  routes: unknown[],
  routeExtras: Record<string, unknown>,
  run: (proxy: TestProxy) => Promise<void>,
): Promise<void> {
  await withTestProxy(
    { ...hcmConfig('b', routes, routeExtras), ...hcmExtra },
    [{ raw: { name: 'b' }, addresses: [`127.0.0.1:${upPort}`] }],
    run,
  );
}

test('compile: unset is null (the HCM value applies), 0 disables, a bad value is reported at its path', () => {
  const report = new Report('t');
  const table = compileRouteTable(
    {
      virtual_hosts: [
        {
          name: 'v',
          domains: ['*'],
          routes: [
            { match: { prefix: '/a' }, route: { cluster: 'c', idle_timeout: '15s' } },
            { match: { prefix: '/b' }, route: { cluster: 'c', idle_timeout: '0s' } },
            { match: { prefix: '/' }, route: { cluster: 'c' } },
          ],
        },
      ],
    },
    'rc',
    report,
  );
  assert.equal(report.failed, false);
  const routeFor = (path: string) =>
    findRoute(table, { authority: 'x', path, headers: [] } as never)?.route.idleTimeoutMs;
  assert.deepEqual([routeFor('/a'), routeFor('/b'), routeFor('/c')], [15_000, 0, null]);
  const bad = new Report('t');
  compileRouteTable(
    {
      virtual_hosts: [
        {
          name: 'v',
          domains: ['*'],
          routes: [{ match: { prefix: '/' }, route: { cluster: 'c', idle_timeout: '-1s' } }],
        },
      ],
    },
    'rc',
    bad,
  );
  assert.deepEqual(
    bad.problems.map((p) => p.path),
    ['rc.virtual_hosts[0].routes[0].route.idle_timeout'],
  );
});

test('a route idle_timeout shorter than the HCM one fires: 408 stream timeout, counted, upstream released', async () => {
  await withProxy({ stream_idle_timeout: '30s' }, [], { idle_timeout: '0.200s' }, async (proxy) => {
    const started = Date.now();
    const res = await fetch(`http://127.0.0.1:${proxy.port}/hang`, { signal: AbortSignal.timeout(3000) });
    assert.equal(res.status, 408);
    assert.equal(await res.text(), 'stream timeout');
    assert.ok(Date.now() - started >= 150, 'fired before the route timeout');
    assert.equal(proxy.counter('http.ingress.downstream_rq_idle_timeout'), 1);
  });
});

test('a route idle_timeout of 0 disables the HCM stream_idle_timeout on that route only', async () => {
  const noIdle = { match: { prefix: '/slow' }, route: { cluster: 'b', idle_timeout: '0s' } };
  await withProxy({ stream_idle_timeout: '0.200s' }, [noIdle], {}, async (proxy) => {
    // The upstream answers after 400 ms, twice the HCM's idle timeout.
    const slow = await fetch(`http://127.0.0.1:${proxy.port}/slow`, { signal: AbortSignal.timeout(3000) });
    assert.equal(slow.status, 200);
    assert.equal(await slow.text(), 'slow');
    assert.equal(proxy.counter('http.ingress.downstream_rq_idle_timeout'), 0);
    // Other routes still have the HCM's.
    const hang = await fetch(`http://127.0.0.1:${proxy.port}/hang`, { signal: AbortSignal.timeout(3000) });
    assert.equal(hang.status, 408);
    assert.equal(proxy.counter('http.ingress.downstream_rq_idle_timeout'), 1);
  });
});

test('a route idle_timeout longer than the HCM one replaces it', async () => {
  await withProxy({ stream_idle_timeout: '0.100s' }, [], { idle_timeout: '2s' }, async (proxy) => {
    const slow = await fetch(`http://127.0.0.1:${proxy.port}/slow`, { signal: AbortSignal.timeout(3000) });
    assert.equal(slow.status, 200);
    assert.equal(proxy.counter('http.ingress.downstream_rq_idle_timeout'), 0);
  });
});
