import assert from 'node:assert/strict';
import * as http from 'node:http';
import * as net from 'node:net';
import { after, before, test } from 'node:test';
import { hcmConfig, startProxy, type TestProxy } from '../../helpers/http-dataplane.js';
import { parseResponses } from './hostile-clients.js';

// Issue 11, finding 3 (last part): a request head dripped one byte at a time cost quadratic
// CPU, as every byte re-joined and re-scanned the whole buffer.

let upstream: http.Server;
let proxy: TestProxy;
let front: net.Server;
let frontPort = 0;
const accepted: net.Socket[] = [];

before(async () => {
  upstream = http.createServer({ maxHeaderSize: 128 * 1024 }, (_req, res) => res.end('ok'));
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const port = (upstream.address() as net.AddressInfo).port;
  // HTTP/1 without sniffing, so the codec takes the socket as it was accepted.
  proxy = await startProxy({ ...hcmConfig('b'), codec_type: 'HTTP1', max_request_headers_kb: 96 }, [
    { raw: { name: 'b' }, addresses: [`127.0.0.1:${port}`] },
  ]);
  // The proxy's side of each connection is kept, so bytes can be handed to it one per read.
  // Its first byte waits in the socket's buffer: a socket with buffered bytes is read through
  // `data` events (`readInto` declines it), which the test then emits itself.
  front = net.createServer((socket) => {
    accepted.push(socket);
    socket.unshift(Buffer.from('G'));
    proxy.hcm.handle(socket);
  });
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
  frontPort = (front.address() as net.AddressInfo).port;
});

after(async () => {
  front.close();
  await proxy.close();
  upstream.close();
  upstream.closeAllConnections();
});

/**
 * Delivers a head of `size` bytes as one-byte reads and returns how many bytes the proxy
 * copied by joining buffers meanwhile: the work that grew with the square of the head when
 * every byte re-joined the whole buffer. Counted, not timed, so a busy machine cannot flake it.
 */
async function drip(size: number): Promise<{ headBytes: number; joinedBytes: number }> {
  const client = net.connect(frontPort, '127.0.0.1');
  const received: Buffer[] = [];
  client.on('data', (c: Buffer) => received.push(c));
  await new Promise((r) => client.once('connect', r));
  while (accepted.length === 0) await new Promise((r) => setImmediate(r));
  const server = accepted.shift() as net.Socket;
  const head = Buffer.from(
    `GET /drip HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Pad: ${'a'.repeat(size - 60)}\r\n\r\n`,
  );
  const concat = Buffer.concat;
  let joinedBytes = 0;
  Buffer.concat = (list: readonly Uint8Array[], length?: number) => {
    const joined = concat(list, length);
    joinedBytes += joined.length;
    return joined;
  };
  try {
    // Each byte is one 'data' event on the proxy's socket, as a dripping client produces.
    for (let i = 1; i < head.length; i++) server.emit('data', head.subarray(i, i + 1));
  } finally {
    Buffer.concat = concat;
  }
  await new Promise((r) => client.once('close', r));
  assert.equal(parseResponses(Buffer.concat(received))[0]?.status, 200);
  return { headBytes: head.length, joinedBytes };
}

test('a head dripped a byte at a time costs linear work', async () => {
  // Quadratic joining would copy about size^2 / 2 = 4.6 GB here; linear copies a few heads.
  const { headBytes, joinedBytes } = await drip(96_000);
  assert.ok(joinedBytes <= 4 * headBytes, `${joinedBytes} bytes joined for a ${headBytes}-byte head`);
});
