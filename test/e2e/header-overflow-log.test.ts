/**
 * Root cause: a request refused with 431 (a head over `max_request_headers_kb`) was answered by
 * the codec outside any stream, so neither codec wrote its access log line, and HTTP/2 counted
 * no `downstream_rq_4xx` nor `downstream_rq_completed`. Both codecs now log the 431 with `DPE`
 * and count it as the HTTP/1 codec did, in a serving process with two workers.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { hcmWithRoutes, httpBootstrap } from '../helpers/bootstraps.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';

const dir = mkdtempSync(join(tmpdir(), 'overflow-log-'));
const path = join(dir, 'access.log');
let proxy: ProxyProcess;
let port = 0;
const big = 'x'.repeat(4096);

before(async () => {
  const hcm = {
    ...hcmWithRoutes([{ match: { prefix: '/' }, direct_response: { status: 200 } }], 'overflow'),
    max_request_headers_kb: 2,
    access_log: [
      {
        name: 'envoy.access_loggers.file',
        config: { path, format: '%PROTOCOL% %REQ(:METHOD)% %REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS%\n' },
      },
    ],
  };
  proxy = await startProxyProcess(httpBootstrap([], hcm), [
    '--concurrency',
    '2',
    '--file-flush-interval-msec',
    '10',
  ]);
  port = await proxy.listenerPort('http');
});

after(async () => {
  await proxy?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The access log's lines once `n` are there (bounded). */
async function lines(n: number): Promise<string[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const all = existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean) : [];
    if (all.length >= n || Date.now() > deadline) return all;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The HCM's counter `name`, summed over the workers by the admin. */
async function counter(name: string): Promise<number> {
  const body = (await proxy.get(`/stats?filter=^http\\.overflow\\.${name}$`)).body;
  const m = new RegExp(`^http\\.overflow\\.${name}: (\\d+)$`, 'm').exec(body);
  return m ? Number(m[1]) : 0;
}

// Root cause of the protocol: the codec's own reply logged a stream with no request, and
// %PROTOCOL% was read from the request alone, so the line said `-` where the reference logs
// its codec's protocol (HTTP/1.1 until a head says otherwise).
test('HTTP/1: a head over the limit is answered 431, logged with DPE, HTTP/1.1 and counted', async () => {
  const before = await counter('downstream_rq_4xx');
  const answer = await new Promise<string>((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let got = '';
    s.setTimeout(10_000, () => s.destroy(new Error('timeout')));
    s.on('data', (d) => {
      got += d;
    });
    s.on('end', () => resolve(got));
    s.on('error', reject);
    s.write(`GET /h1 HTTP/1.1\r\nhost: a\r\nx-big: ${big}\r\n\r\n`);
  });
  assert.match(answer, /^HTTP\/1.1 431 /);
  assert.deepEqual(await lines(1), ['HTTP/1.1 - - 431 DPE']);
  assert.equal(await counter('downstream_rq_4xx'), before + 1);
});

test('HTTP/2: a head over the limit is answered 431, logged with DPE and counted as over HTTP/1', async () => {
  const from = (await lines(1)).length;
  const before4xx = await counter('downstream_rq_4xx');
  const beforeDone = await counter('downstream_rq_completed');
  const beforeLarge = await counter('downstream_rq_too_large');
  const session = http2.connect(`http://127.0.0.1:${port}`);
  try {
    const status = await new Promise<number>((resolve, reject) => {
      const stream = session.request({ ':path': '/h2', 'x-big': big });
      stream.setTimeout(10_000, () => stream.destroy(new Error('timeout')));
      stream.on('response', (h) => resolve(Number(h[':status'])));
      stream.on('error', reject);
      stream.resume();
    });
    assert.equal(status, 431);
  } finally {
    session.destroy();
  }
  assert.deepEqual((await lines(from + 1)).slice(from), ['HTTP/2 GET /h2 431 DPE']);
  assert.equal(await counter('downstream_rq_4xx'), before4xx + 1);
  assert.equal(await counter('downstream_rq_completed'), beforeDone + 1);
  assert.equal(await counter('downstream_rq_too_large'), beforeLarge + 1);
});
