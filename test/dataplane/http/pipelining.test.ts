import assert from 'node:assert/strict';
import * as http from 'node:http';
import type * as net from 'node:net';
import { after, before, test } from 'node:test';
import { hcmConfig, startProxy, type TestProxy } from '../../helpers/http-dataplane.js';
import { parseResponses, rawClient } from './hostile-clients.js';

// Issue 11, finding 2: pipelined requests ran concurrently (answered out of order), a HEAD
// among them broke the others' bodies, bytes after `Connection: close` still went upstream,
// and 2,000 pipelined requests opened 1,024 upstream connections.

let upstream: http.Server;
let proxy: TestProxy;
const seen: string[] = [];
let open = 0;
let maxOpen = 0;

before(async () => {
  upstream = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    const url = req.url ?? '/';
    if (url === '/slow') return void setTimeout(() => res.end('slow'), 300);
    const body = `body of ${url}`;
    // Set explicitly: node:http leaves it out of HEAD answers.
    res.setHeader('content-length', body.length);
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  upstream.on('connection', (socket: net.Socket) => {
    open += 1;
    maxOpen = Math.max(maxOpen, open);
    socket.on('close', () => {
      open -= 1;
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const port = (upstream.address() as net.AddressInfo).port;
  // HTTP/1.0 is answered only with accept_http_10 (the reference's default refuses it with 426).
  proxy = await startProxy({ ...hcmConfig('b'), http_protocol_options: { accept_http_10: true } }, [
    { raw: { name: 'b' }, addresses: [`127.0.0.1:${port}`] },
  ]);
});

after(async () => {
  await proxy.close();
  upstream.close();
  upstream.closeAllConnections();
});

const get = (path: string, extra = '') => `GET ${path} HTTP/1.1\r\nHost: x\r\n${extra}\r\n`;

test('pipelined requests are answered in order: /slow before /fast', async () => {
  const c = await rawClient(proxy.port);
  c.socket.write(get('/slow') + get('/fast'));
  const data = await c.waitBytes(Number.MAX_SAFE_INTEGER, 1500);
  const responses = parseResponses(data);
  assert.deepEqual(
    responses.map((r) => r.body),
    ['slow', 'body of /fast'],
  );
  c.socket.destroy();
});

test('a HEAD among pipelined GETs keeps every body and its length', async () => {
  const c = await rawClient(proxy.port);
  c.socket.write(
    get('/a') + `HEAD /b HTTP/1.1\r\nHost: x\r\n\r\n` + get('/c') + get('/d', 'Connection: close\r\n'),
  );
  assert.equal(await c.closed(2000), true);
  const responses = parseResponses(c.received(), ['GET', 'HEAD', 'GET', 'GET']);
  assert.equal(responses.length, 4);
  assert.deepEqual(
    responses.map((r) => r.body),
    ['body of /a', '', 'body of /c', 'body of /d'],
  );
  for (const r of [responses[0], responses[2], responses[3]])
    assert.equal(Number(r?.headers['content-length']), r?.body.length);
  // The HEAD answer carries the length the GET would have, and no body bytes.
  assert.equal(responses[1]?.headers['content-length'], String('body of /b'.length));
});

test('nothing after `Connection: close` (or HTTP/1.0 without keep-alive) reaches the upstream', async () => {
  seen.length = 0;
  let c = await rawClient(proxy.port);
  c.socket.write(get('/first', 'Connection: close\r\n') + get('/smuggled'));
  assert.equal(await c.closed(2000), true);
  assert.deepEqual(
    parseResponses(c.received()).map((r) => r.body),
    ['body of /first'],
  );
  c = await rawClient(proxy.port);
  c.socket.write('GET /old HTTP/1.0\r\nHost: x\r\n\r\n' + get('/smuggled2'));
  assert.equal(await c.closed(2000), true);
  assert.deepEqual(
    parseResponses(c.received()).map((r) => r.body),
    ['body of /old'],
  );
  assert.deepEqual(seen, ['GET /first', 'GET /old']);
});

test('2,000 pipelined requests on one connection use one upstream connection at a time', async () => {
  seen.length = 0;
  maxOpen = open;
  const before = proxy.counter('cluster.b.upstream_cx_total');
  const c = await rawClient(proxy.port);
  const n = 2000;
  let batch = '';
  for (let i = 0; i < n; i++) batch += get(`/n/${i}`, i === n - 1 ? 'Connection: close\r\n' : '');
  c.socket.write(batch);
  assert.equal(await c.closed(15_000), true);
  const responses = parseResponses(c.received());
  assert.equal(responses.length, n);
  assert.deepEqual(
    responses.map((r) => r.body),
    responses.map((_, i) => `body of /n/${i}`),
  );
  assert.ok(maxOpen <= 1, `at most one upstream connection open at a time, saw ${maxOpen}`);
  assert.ok(proxy.counter('cluster.b.upstream_cx_total') - before <= 1);
});
