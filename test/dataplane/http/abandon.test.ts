import assert from 'node:assert/strict';
import * as http from 'node:http';
import type * as net from 'node:net';
import { after, before, test } from 'node:test';
import { settle } from '../../helpers/dataplane.js';
import { hcmConfig, startProxy, type TestProxy } from '../../helpers/http-dataplane.js';
import { halfOpenFront, rawClient } from './hostile-clients.js';

// Issue 11, finding 3: a POST head with `Content-Length: 8192`, 10 body bytes, then close left
// the socket in CLOSE-WAIT holding its upstream connection and request; 1,100 of them made
// every later request get `503 overflow`.

let upstream: http.Server;
let proxy: TestProxy;
let front: { port: number; close(): void };
let upstreamOpen = 0;

before(async () => {
  upstream = http.createServer((req, res) => {
    if (req.url === '/hang') return;
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  upstream.on('connection', (socket: net.Socket) => {
    upstreamOpen += 1;
    socket.on('close', () => {
      upstreamOpen -= 1;
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const port = (upstream.address() as net.AddressInfo).port;
  proxy = await startProxy(hcmConfig('b'), [{ raw: { name: 'b' }, addresses: [`127.0.0.1:${port}`] }]);
  front = await halfOpenFront(proxy);
});

after(async () => {
  front.close();
  await proxy.close();
  upstream.close();
  upstream.closeAllConnections();
});

const ABANDONED = Buffer.concat([
  Buffer.from('POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 8192\r\n\r\n'),
  Buffer.alloc(10, 'a'),
]);

/**
 * How long a wait for the proxy to close or settle may take. Far below every timeout that could
 * close the socket otherwise (stream idle: 5 min), so what happens within it was the reset; far
 * above what a loaded machine needs (a probe at a 3% CPU quota saw 5 s for the 1,100 uploads).
 */
const PROMPT_MS = 30_000;

/** One abandoned upload; true when the proxy closed the socket promptly (no CLOSE-WAIT). */
async function abandon(): Promise<boolean> {
  const c = await rawClient(front.port);
  c.socket.write(ABANDONED);
  c.socket.end();
  return c.closed(PROMPT_MS);
}

test('an abandoned request body resets the exchange at once', async () => {
  assert.equal(await abandon(), true, 'the proxy closes its side at once');
  assert.equal(await settle(() => proxy.gauge('cluster.b.upstream_rq_active'), 0, PROMPT_MS), 0);
  // The upstream connection carried a half-sent body: it is destroyed, not pooled.
  assert.equal(await settle(() => upstreamOpen, 0, PROMPT_MS), 0);
  assert.equal(await settle(() => proxy.gauge('http.ingress.downstream_cx_active'), 0, PROMPT_MS), 0);
});

test('1,100 abandoned uploads from one client leave no breaker slot taken', async () => {
  const total = 1100;
  let closedPromptly = 0;
  for (let i = 0; i < total; i += 50) {
    const batch = await Promise.all(Array.from({ length: Math.min(50, total - i) }, abandon));
    closedPromptly += batch.filter(Boolean).length;
    // A batch left open fails now, not after every later batch waited its PROMPT_MS too.
    assert.equal(closedPromptly, Math.min(i + 50, total), `uploads closed by the proxy after ${i + 50}`);
  }
  assert.equal(await settle(() => proxy.gauge('cluster.b.upstream_rq_active'), 0, PROMPT_MS), 0);
  assert.equal(proxy.gauge('cluster.b.upstream_rq_pending_active'), 0);
  assert.equal(proxy.gauge('cluster.b.circuit_breakers.default.rq_open'), 0);
  assert.equal(proxy.gauge('cluster.b.circuit_breakers.default.rq_pending_open'), 0);
  assert.equal(await settle(() => proxy.gauge('http.ingress.downstream_cx_active'), 0, PROMPT_MS), 0);
  const res = await fetch(`http://127.0.0.1:${front.port}/after`, { method: 'POST', body: 'x' });
  assert.equal(res.status, 200);
  assert.equal(await res.text(), 'ok');
  assert.equal(proxy.counter('cluster.b.upstream_rq_pending_overflow'), 0);
});

test('a client that closes while its whole request waits on the upstream resets it too', async () => {
  const c = await rawClient(front.port);
  c.socket.write('GET /hang HTTP/1.1\r\nHost: x\r\n\r\n');
  assert.equal(await settle(() => proxy.gauge('cluster.b.upstream_rq_active'), 1, PROMPT_MS), 1);
  c.socket.end();
  // As the reference does: the connection ends with the client's side, and the request with it.
  assert.equal(await c.closed(PROMPT_MS), true);
  assert.equal(await settle(() => proxy.gauge('cluster.b.upstream_rq_active'), 0, PROMPT_MS), 0);
  assert.equal(await settle(() => upstreamOpen, 0, PROMPT_MS), 0);
});
