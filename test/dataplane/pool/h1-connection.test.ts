/**
 * How a request goes out on an upstream HTTP/1.1 connection (src/dataplane/pool/h1-connection.ts).
 * Root cause of the batching: the head was written as soon as a connection took the request,
 * and the body, which the downstream codec feeds right after in the same tick, in writes of
 * its own: two system calls (and two wake-ups of the upstream) for a small POST. The head of a
 * request with a body is now held to the end of the tick with what follows it.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, afterEach, before, beforeEach, test } from 'node:test';
import { queryObjects } from 'node:v8';
import { H1Request } from '../../../src/dataplane/pool/h1-connection.js';
import { hcmConfig, rawExchange, startProxy, type TestProxy } from '../../helpers/http-dataplane.js';
import { type RecordingOrigin, recordingOrigin } from '../../helpers/recording-origin.js';

let origin: RecordingOrigin;
let proxy: TestProxy;
/** The proxy's `write` calls on its sockets to the origin, in order. */
let writes: Buffer[] = [];
const realWrite = net.Socket.prototype.write;

before(async () => {
  origin = await recordingOrigin();
  proxy = await startProxy(hcmConfig('origin'), [
    { raw: { name: 'origin' }, addresses: [`127.0.0.1:${origin.port}`] },
  ]);
});

after(async () => {
  await proxy.close();
  origin.close();
});

beforeEach(() => {
  writes = [];
  net.Socket.prototype.write = function (this: net.Socket, ...args: unknown[]) {
    if (this.remotePort === origin.port) {
      const [data, encoding] = args as [string | Buffer, BufferEncoding | undefined];
      writes.push(typeof data === 'string' ? Buffer.from(data, encoding ?? 'utf8') : Buffer.from(data));
    }
    return (realWrite as (...a: unknown[]) => boolean).apply(this, args);
  } as typeof net.Socket.prototype.write;
  origin.reset();
});

afterEach(() => {
  net.Socket.prototype.write = realWrite;
});

const request = (head: string, body: string | Buffer = '') =>
  rawExchange(proxy.port, Buffer.concat([Buffer.from(`${head}\r\nconnection: close\r\n\r\n`), Buffer.from(body)]), 3000);

test('a POST whose body came with its head goes upstream in one write', async () => {
  const body = 'x'.repeat(100);
  const answer = await request(`POST /p HTTP/1.1\r\nhost: a.test\r\ncontent-length: ${body.length}`, body);
  assert.match(answer, /^HTTP\/1\.1 200 /);
  assert.equal(origin.requests.length, 1);
  assert.equal(origin.requests[0]?.body, body);
  assert.equal(writes.length, 1, 'head and body in one write');
  const sent = writes[0]?.toString('latin1') ?? '';
  assert.match(sent, /^POST \/p HTTP\/1\.1\r\n/);
  assert.ok(sent.endsWith(`\r\n\r\n${body}`));
});

test('a chunked request that came whole goes upstream as one write: head, chunks and the last chunk', async () => {
  const answer = await request(
    'POST /c HTTP/1.1\r\nhost: a.test\r\ntransfer-encoding: chunked',
    '5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n',
  );
  assert.match(answer, /^HTTP\/1\.1 200 /);
  assert.equal(origin.requests[0]?.chunked, true);
  assert.equal(origin.requests[0]?.body, 'hello world');
  assert.equal(writes.length, 1);
  assert.ok(writes[0]?.toString('latin1').endsWith('0\r\n\r\n'));
});

test('a body that comes later does not hold the head back: the head goes at the end of its tick', async () => {
  const socket = net.connect(proxy.port, '127.0.0.1');
  socket.on('error', () => {});
  const received: Buffer[] = [];
  socket.on('data', (c: Buffer) => received.push(c));
  socket.write('POST /late HTTP/1.1\r\nhost: a.test\r\ncontent-length: 4\r\nconnection: close\r\n\r\n');
  // The head reaches the origin before any body byte was sent.
  for (let i = 0; i < 300 && writes.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(writes.length, 1);
  assert.ok(writes[0]?.toString('latin1').endsWith('\r\n\r\n'));
  const closed = new Promise((r) => socket.once('close', r));
  socket.write('late');
  await closed;
  assert.match(Buffer.concat(received).toString('latin1'), /^HTTP\/1\.1 200 /);
  assert.equal(origin.requests[0]?.body, 'late');
  assert.equal(writes.length, 2);
});

test('a large body that came with its head arrives whole (written corked, not copied)', async () => {
  const body = Buffer.alloc(40 * 1024, 'y');
  const answer = await request(`POST /big HTTP/1.1\r\nhost: a.test\r\ncontent-length: ${body.length}`, body);
  assert.match(answer, /^HTTP\/1\.1 200 /);
  assert.equal(origin.requests[0]?.body, body.toString('latin1'));
});

test('a request without a body is written at once, as one write', async () => {
  const answer = await request('GET /g HTTP/1.1\r\nhost: a.test');
  assert.match(answer, /^HTTP\/1\.1 200 /);
  assert.equal(writes.length, 1);
  assert.match(writes[0]?.toString('latin1') ?? '', /^GET \/g HTTP\/1\.1\r\n[\s\S]*\r\n\r\n$/);
});

test('an HTTP/2 stream whose DATA came with its HEADERS goes to the HTTP/1.1 upstream in one write', async () => {
  const { connect } = await import('node:http2');
  const client = connect(`http://127.0.0.1:${proxy.port}`);
  client.on('error', () => {});
  try {
    const status = await new Promise<number>((resolve, reject) => {
      const req = client.request({ ':method': 'POST', ':path': '/h2', 'content-length': '5' });
      req.on('response', (h) => resolve(Number(h[':status'])));
      req.on('error', reject);
      req.end('hello');
      req.resume();
    });
    assert.equal(status, 200);
  } finally {
    client.close();
  }
  assert.equal(origin.requests[0]?.body, 'hello');
  assert.equal(writes.length, 1);
});

test('a parked connection holds no finished request, nor through it the exchange', async () => {
  // Root cause: the connection kept the request its response body went to after the
  // response ended, so each idle upstream connection held its last request (and through the
  // handler the whole exchange and downstream stream) until its next one: live across
  // young-generation collections, which copied and promoted them (bench/README.md).
  const answer = await request('GET /parked HTTP/1.1\r\nhost: a.test');
  assert.match(answer, /^HTTP\/1\.1 200 [\s\S]*ok$/);
  assert.equal(proxy.gauge('cluster.origin.upstream_cx_active'), 1, 'the upstream connection is parked, not closed');
  // queryObjects collects garbage before it counts.
  assert.equal(queryObjects(H1Request, { format: 'count' }), 0);
});
