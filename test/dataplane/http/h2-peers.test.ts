/**
 * Real HTTP/2 clients through the downstream codec to a real HTTP/1.1 upstream: node:http2
 * (nghttp2's HPACK encoder and decoder, with Huffman coding and dynamic tables, on one
 * connection for many requests) with random fields both ways, and h2load's many streams.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import type * as net from 'node:net';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { hcmConfig, startProxy, type TestProxy } from '../../helpers/http-dataplane.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 60);

let upstream: http.Server;
let proxy: TestProxy;
before(async () => {
  // Echoes the request's x-q-* fields in its body, and answers with each x-r-* field's value
  // as a response field of the same name.
  upstream = http.createServer((req, res) => {
    const seen: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (name.startsWith('x-q-')) seen[name] = String(value);
      if (name.startsWith('x-r-')) res.setHeader(name, String(value));
    }
    req.resume();
    req.on('end', () => res.end(JSON.stringify(seen)));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const port = (upstream.address() as net.AddressInfo).port;
  proxy = await startProxy(hcmConfig('web'), [{ raw: { name: 'web' }, addresses: [`127.0.0.1:${port}`] }]);
});
after(async () => {
  await proxy.close();
  upstream.closeAllConnections();
  upstream.close();
});

/** Field values a client may send: visible ASCII and spaces inside. */
const value = fc
  .string({ unit: fc.constantFrom(...'abcxyz019 -_./:;=,"{}~'.split('')), maxLength: 60 })
  .map((v) => v.trim());
const fields = fc.dictionary(fc.constantFrom('a', 'b', 'c', 'long-name-one', 'd'), value, { maxKeys: 5 });

test('node:http2: random request and response fields arrive intact, request after request on one connection', async () => {
  const client = http2.connect(`http://127.0.0.1:${proxy.port}`);
  client.on('error', () => {});
  try {
    await fc.assert(
      fc.asyncProperty(fields, fields, fc.string({ maxLength: 3000 }), async (q, r, body) => {
        const headers: http2.OutgoingHttpHeaders = { ':method': 'POST', ':path': '/echo' };
        for (const [k, v] of Object.entries(q)) headers[`x-q-${k}`] = v;
        for (const [k, v] of Object.entries(r)) headers[`x-r-${k}`] = v;
        const stream = client.request(headers);
        stream.end(body);
        const [status, got, text] = await new Promise<[number, http2.IncomingHttpHeaders, string]>(
          (resolve, reject) => {
            let h: http2.IncomingHttpHeaders = {};
            let data = '';
            stream.on('response', (x) => {
              h = x;
            });
            stream.setEncoding('utf8');
            stream.on('data', (c: string) => {
              data += c;
            });
            stream.on('end', () => resolve([Number(h[':status']), h, data]));
            stream.on('error', reject);
          },
        );
        assert.equal(status, 200);
        const expected = Object.fromEntries(Object.entries(q).map(([k, v]) => [`x-q-${k}`, v]));
        assert.deepEqual(JSON.parse(text), expected);
        for (const [k, v] of Object.entries(r)) assert.equal(got[`x-r-${k}`], v, `x-r-${k}`);
      }),
      { seed: 5, numRuns: RUNS },
    );
  } finally {
    client.close();
  }
});

test('h2load: 2000 requests on 4 connections, 20 streams each at once, all answered', async (t) => {
  const out = await new Promise<string | null>((resolve) => {
    execFile(
      'h2load',
      ['-n', '2000', '-c', '4', '-m', '20', `http://127.0.0.1:${proxy.port}/load`],
      { timeout: 60_000 },
      (err, stdout) => resolve((err as NodeJS.ErrnoException | null)?.code === 'ENOENT' ? null : stdout),
    );
  });
  if (out === null) {
    t.skip('h2load not installed (Debian package nghttp2-client)');
    return;
  }
  assert.match(out, /requests: 2000 total, 2000 started, 2000 done, 2000 succeeded, 0 failed, 0 errored/);
  assert.match(out, /status codes: 2000 2xx/);
});
