/**
 * Request fields as an HTTP/2 upstream (node:http2 server) receives them from HTTP/1 clients.
 * Root cause: repeated `cookie` fields were joined with `, ` like any other list, and a cookie
 * parser reads `a=1, b=2` as one cookie `a` (the reference joins them with `; `, as RFC 9113
 * 8.2.3 does). Bytes past ASCII must reach the upstream as they came (node:http2 writes
 * values as latin1, as the data plane holds them), and come back the same way.
 */
import assert from 'node:assert/strict';
import * as http2 from 'node:http2';
import type * as net from 'node:net';
import { after, before, test } from 'node:test';
import { hcmConfig, rawExchange, startProxy, type TestProxy } from '../../helpers/http-dataplane.js';

let upstream: http2.Http2Server;
const received: string[][] = [];
let proxy: TestProxy;

before(async () => {
  upstream = http2.createServer((req, res) => {
    received.push(req.rawHeaders);
    // node:http2 reads values as latin1: each character is one byte the proxy sent.
    res.setHeader('x-back', Buffer.from('größe', 'utf8').toString('latin1'));
    res.end('ok');
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const port = (upstream.address() as net.AddressInfo).port;
  proxy = await startProxy(hcmConfig('h2'), [
    { raw: { name: 'h2', http2_protocol_options: {} }, addresses: [`127.0.0.1:${port}`] },
  ]);
});

after(async () => {
  await proxy.close();
  upstream.close();
});

/** Sends `fields` (raw header lines) over HTTP/1.1 and returns the answer and the fields the upstream got. */
async function send(fields: Buffer): Promise<{ answer: Buffer; got: Map<string, Buffer> }> {
  received.length = 0;
  const head = Buffer.concat([
    Buffer.from('GET / HTTP/1.1\r\nHost: a.test\r\n'),
    fields,
    Buffer.from('Connection: close\r\n\r\n'),
  ]);
  const answer = Buffer.from(await rawExchange(proxy.port, head, 5000), 'latin1');
  const raw = received[0] ?? [];
  const got = new Map<string, Buffer>();
  for (let i = 0; i < raw.length; i += 2)
    got.set(raw[i] as string, Buffer.from(raw[i + 1] as string, 'latin1'));
  return { answer, got };
}

test('UTF-8 bytes in a field value reach the HTTP/2 upstream unchanged, and come back unchanged', async () => {
  const value = Buffer.from('José ☃ 名前', 'utf8');
  const { answer, got } = await send(Buffer.concat([Buffer.from('X-Name: '), value, Buffer.from('\r\n')]));
  assert.deepEqual(got.get('x-name'), value);
  assert.ok(answer.includes(Buffer.from('x-back: größe\r\n', 'utf8')), answer.toString('latin1'));
});

test('cookie fields reach the HTTP/2 upstream as one value joined by "; "; other repeated fields by ", "', async () => {
  const { got } = await send(Buffer.from('Cookie: a=1\r\nX-A: 1\r\nCookie: b=2\r\nX-A: 2\r\n'));
  assert.equal(got.get('cookie')?.toString(), 'a=1; b=2');
  assert.equal(got.get('x-a')?.toString(), '1, 2');
});
