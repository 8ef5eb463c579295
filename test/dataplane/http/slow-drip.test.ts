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
  proxy = await startProxy({ ...hcmConfig('b'), max_request_headers_kb: 96 }, [
    { raw: { name: 'b' }, addresses: [`127.0.0.1:${port}`] },
  ]);
  // The proxy's side of each connection is kept, so bytes can be handed to it one per read.
  front = net.createServer((socket) => {
    accepted.push(socket);
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
 * Delivers a head of `size` bytes as one-byte reads; returns the milliseconds the proxy spent
 * on the first half of the bytes and on the second half.
 */
async function drip(size: number): Promise<[number, number]> {
  const client = net.connect(frontPort, '127.0.0.1');
  const received: Buffer[] = [];
  client.on('data', (c) => received.push(c));
  await new Promise((r) => client.once('connect', r));
  while (accepted.length === 0) await new Promise((r) => setImmediate(r));
  const server = accepted.shift() as net.Socket;
  const head = Buffer.from(
    `GET /drip HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Pad: ${'a'.repeat(size - 60)}\r\n\r\n`,
  );
  const half = head.length >> 1;
  // Each byte is one 'data' event on the proxy's socket, as a dripping client produces.
  const t0 = performance.now();
  for (let i = 0; i < half; i++) server.emit('data', head.subarray(i, i + 1));
  const t1 = performance.now();
  for (let i = half; i < head.length; i++) server.emit('data', head.subarray(i, i + 1));
  const t2 = performance.now();
  await new Promise((r) => client.once('close', r));
  assert.equal(parseResponses(Buffer.concat(received))[0]?.status, 200);
  return [t1 - t0, t2 - t1];
}

test('a head dripped a byte at a time costs linear time', async () => {
  await drip(96_000); // warm-up
  // Linear: both halves cost the same. Quadratic: each byte costs as much as the bytes
  // before it, so the second half costs three times the first (twice here, with the fixed
  // cost of each read). The better of two runs, so a GC pause does not decide.
  const runs = [await drip(96_000), await drip(96_000)];
  const ratio = Math.min(...runs.map(([first, second]) => second / first));
  assert.ok(ratio < 1.5, `second half / first half: ${runs.map(([a, b]) => (b / a).toFixed(2)).join(', ')}`);
});
