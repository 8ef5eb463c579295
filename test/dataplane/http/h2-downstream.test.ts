import assert from 'node:assert/strict';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import type * as net from 'node:net';
import { after, before, test } from 'node:test';
import { hcmConfig, startProxy, type TestProxy } from '../../helpers/http-dataplane.js';

/**
 * The HTTP/2 downstream codec around its response shapes: request bodies (read) and none
 * (never read), empty responses (ended with the HEADERS frame), HEAD, a response larger than
 * the stream's flow-control window (the drain path) and a client reset mid-exchange.
 */

const BIG = Buffer.alloc(1024 * 1024, 'x');
let upstream: http.Server;
let proxy: TestProxy;
let client: http2.ClientHttp2Session;
/** Responses the upstream holds until the test releases them (the reset case). */
const held: http.ServerResponse[] = [];

before(async () => {
  upstream = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (req.url === '/empty') res.writeHead(200, { 'content-length': '0' }).end();
      else if (req.url === '/no-content') res.writeHead(204).end();
      else if (req.url === '/big') res.writeHead(200, { 'content-length': BIG.length }).end(BIG);
      else if (req.url === '/hold' || req.url === '/slow') held.push(res);
      else res.end(`${req.method} ${req.url} ${body.length} ${body.toString('latin1', 0, 16)}`);
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const port = (upstream.address() as net.AddressInfo).port;
  const slow = { match: { prefix: '/slow' }, route: { cluster: 'up', timeout: '0.3s' } };
  proxy = await startProxy(hcmConfig('up', [slow]), [
    { raw: { name: 'up' }, addresses: [`127.0.0.1:${port}`] },
  ]);
  client = http2.connect(`http://127.0.0.1:${proxy.port}`);
});

after(async () => {
  client.destroy();
  for (const res of held) res.destroy();
  await proxy.close();
  upstream.close();
  upstream.closeAllConnections();
});

interface Answer {
  status: number;
  headers: http2.IncomingHttpHeaders;
  body: Buffer;
  /** The response's HEADERS frame carried END_STREAM (no DATA frame followed). */
  endAfterHeaders: boolean;
}

function request(headers: http2.OutgoingHttpHeaders, body?: Buffer, readDelayMs = 0): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer to ${headers[':path']}`)), 5000);
    const s = client.request({ ':authority': 'h2.test', ...headers }, { endStream: body === undefined });
    if (body) s.end(body);
    const chunks: Buffer[] = [];
    let answer: http2.IncomingHttpHeaders = {};
    let endAfterHeaders = false;
    s.on('response', (h, flags) => {
      answer = h;
      endAfterHeaders = (flags & http2.constants.NGHTTP2_FLAG_END_STREAM) !== 0;
      // A slow reader: the proxy's writes back up behind the stream's window meanwhile.
      if (readDelayMs > 0) {
        s.pause();
        setTimeout(() => s.resume(), readDelayMs);
      }
    });
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('end', () => {
      clearTimeout(timer);
      resolve({
        status: Number(answer[':status']),
        headers: answer,
        body: Buffer.concat(chunks),
        endAfterHeaders,
      });
    });
    s.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

test('a request body is forwarded whole; a request without one reaches the upstream bodiless', async () => {
  const payload = Buffer.alloc(200_000, 'p');
  const post = await request({ ':method': 'POST', ':path': '/post' }, payload);
  assert.equal(post.status, 200);
  assert.equal(post.body.toString(), `POST /post 200000 ${'p'.repeat(16)}`);
  const get = await request({ ':path': '/get' });
  assert.equal(get.body.toString(), 'GET /get 0 ');
  assert.equal(get.endAfterHeaders, false);
});

test('an empty response ends with its HEADERS frame; HEAD gets the length and no body', async () => {
  const empty = await request({ ':path': '/empty' });
  assert.equal(empty.status, 200);
  assert.equal(empty.headers['content-length'], '0');
  assert.equal(empty.body.length, 0);
  assert.equal(empty.endAfterHeaders, true);
  const noContent = await request({ ':path': '/no-content' });
  assert.equal(noContent.status, 204);
  assert.equal(noContent.endAfterHeaders, true);
  const head = await request({ ':method': 'HEAD', ':path': '/big' });
  assert.equal(head.status, 200);
  assert.equal(head.headers['content-length'], String(BIG.length));
  assert.equal(head.body.length, 0);
});

test('a response larger than the flow-control window reaches a slow reader intact', async () => {
  const answers = await Promise.all([
    request({ ':path': '/big' }, undefined, 200),
    request({ ':path': '/big' }, undefined, 50),
  ]);
  for (const a of answers) {
    assert.equal(a.status, 200);
    assert.equal(a.body.length, BIG.length);
    assert.ok(a.body.equals(BIG));
  }
});

test('a client reset of a bodiless request reaches the exchange; finished streams leave nothing active', async () => {
  const before = proxy.counter('http.ingress.downstream_rq_rx_reset');
  const heldBefore = held.length;
  const s = client.request({ ':authority': 'h2.test', ':path': '/hold' });
  s.on('error', () => {});
  const deadline = Date.now() + 5000;
  while (held.length === heldBefore && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  assert.equal(held.length, heldBefore + 1, 'the upstream got the request');
  s.close(http2.constants.NGHTTP2_CANCEL);
  while (proxy.counter('http.ingress.downstream_rq_rx_reset') === before && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 10));
  assert.equal(proxy.counter('http.ingress.downstream_rq_rx_reset'), before + 1);
  await Promise.all(Array.from({ length: 50 }, (_, i) => request({ ':path': `/n${i}` })));
  while (proxy.gauge('http.ingress.downstream_rq_active') !== 0 && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 10));
  assert.equal(proxy.gauge('http.ingress.downstream_rq_active'), 0);
});

test('a stream that reuses the timers of a finished one counts its route timeout from its own start', async () => {
  // The first exchange arms the session's timers and gives them back when it ends.
  await request({ ':path': '/first' });
  await new Promise((r) => setTimeout(r, 200));
  const started = Date.now();
  const [late, other] = await Promise.all([request({ ':path': '/slow' }), request({ ':path': '/slow' })]);
  const elapsed = Date.now() - started;
  assert.equal(late.status, 504);
  assert.equal(other.status, 504);
  assert.ok(elapsed >= 280, `timed out after ${elapsed} ms, before the route's 300 ms`);
  assert.ok(elapsed < 2000, `timed out after ${elapsed} ms`);
});
