/**
 * Stream filters' body callbacks over real sockets (a node:http client and upstream around the
 * connection manager): a decoder that buffers the whole request body and records its size as
 * dynamic metadata and filter state, which a later filter and the access log read; an encoder
 * that holds the response until it has all of it; and the buffer limit (the listener's
 * `per_connection_buffer_limit_bytes`) answering 413 on the request side, 500 on the response;
 * the proxy's own replies through the encoders' data callbacks, and HTTP/2 request trailers
 * through the decoders' trailers callback.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import type * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { flushAccessLogs } from '../../../../src/dataplane/access-log/file-sink.js';
import { setDynamicMetadata, setFilterState } from '../../../../src/dataplane/access-log/stream-info.js';
import {
  CONTINUE,
  type FilterStream,
  STOP_ITERATION,
  STOP_ITERATION_AND_BUFFER,
  type StreamFilter,
  type StreamFilterMaker,
} from '../../../../src/dataplane/http/filters/api.js';
import type { HttpConnectionManager } from '../../../../src/dataplane/http/manager.js';
import { hcmConfig, startProxy, type TestProxy } from '../../../helpers/http-dataplane.js';
import { send } from '../../../helpers/http-send.js';

const dir = mkdtempSync(join(tmpdir(), 'filter-runner-'));
let upstream: http.Server;
let upPort = 0;
const proxies: TestProxy[] = [];

before(async () => {
  // Echoes what the filters added to the request, and answers `?size=N` with N bytes.
  upstream = http.createServer((req, res) => {
    let got = 0;
    req.on('data', (c: Buffer) => (got += c.length));
    req.on('end', () => {
      const size = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('size') ?? 0);
      res.setHeader('x-upstream-got', String(got));
      res.setHeader('x-upstream-saw', String(req.headers['x-body-size'] ?? '-'));
      res.setHeader('x-upstream-later', String(req.headers['x-later-saw'] ?? '-'));
      res.end(size > 0 ? 'r'.repeat(size) : 'ok');
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  upPort = (upstream.address() as net.AddressInfo).port;
});

after(async () => {
  for (const p of proxies) await p.close();
  upstream.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Buffers the request body, then records its size for later filters, the upstream and the log. */
const bodySizer: StreamFilterMaker = () => ({
  decodeHeaders: (s) => (s.req.hasBody ? STOP_ITERATION : CONTINUE),
  decodeData(s: FilterStream, _chunk: Buffer, end: boolean) {
    if (!end) return STOP_ITERATION_AND_BUFFER;
    const size = (s.decodingBuffer?.length ?? 0) + _chunk.length;
    setDynamicMetadata(s.info, 'test.sizer', { size, note: { kind: 'body' } });
    setFilterState(s.info, 'body.size', `${size} bytes`, true);
    s.req.headers.push('x-body-size', String(size));
    s.continueDecoding();
    return CONTINUE;
  },
});

/** Reads what the sizer recorded: it runs after it. */
const laterReader: StreamFilterMaker = () => ({
  decodeHeaders(s) {
    const size = s.info.dynamicMetadata?.['test.sizer']?.size;
    s.req.headers.push('x-later-saw', size === undefined ? 'nothing' : String(size));
    return CONTINUE;
  },
});

/** Holds the whole response, then says how long its body was. */
const responseSizer: StreamFilterMaker = () => {
  let headers: string[] = [];
  const filter: StreamFilter = {
    decodeHeaders: () => CONTINUE,
    encodeHeaders(_status, h) {
      headers = h;
      return STOP_ITERATION;
    },
    encodeData(s, chunk, end) {
      if (!end) return STOP_ITERATION_AND_BUFFER;
      headers.push('x-response-size', String((s.encodingBuffer?.length ?? 0) + chunk.length));
      s.continueEncoding();
      return CONTINUE;
    },
  };
  return filter;
};

let files = 0;
/** A proxy with `makers` as its stream filters, a buffer limit of `limit`, and an access log. */
async function proxyWith(makers: StreamFilterMaker[], limit: number) {
  const path = join(dir, `access-${++files}.log`);
  const format =
    '%DYNAMIC_METADATA(test.sizer:size)% %DYNAMIC_METADATA(test.sizer:note)% %FILTER_STATE(body.size:PLAIN)% %FILTER_STATE(missing)%\n';
  const proxy = await startProxy(
    { ...hcmConfig('b'), access_log: [{ name: 'envoy.file_access_log', config: { path, format } }] },
    [{ raw: { name: 'b' }, addresses: [`127.0.0.1:${upPort}`] }],
  );
  proxies.push(proxy);
  const hcm = proxy.hcm as HttpConnectionManager;
  // The registry's filters are configs; these test filters are made directly.
  Object.assign(hcm, { streamFilters: makers });
  hcm.deps.bufferLimitBytes = limit;
  return {
    proxy,
    log: () => {
      flushAccessLogs();
      return readFileSync(path, 'utf8').split('\n').filter(Boolean);
    },
  };
}

describe('stream filters with bodies, over real sockets', () => {
  it('a buffering decoder sees the whole body; what it records reaches a later filter, the upstream and the log', async () => {
    const { proxy, log } = await proxyWith([bodySizer, laterReader], 1024);
    const body = 'x'.repeat(700);
    const res = await send(proxy.port, 'POST', '/', { 'content-type': 'text/plain' }, body);
    assert.equal(res.status, 200);
    assert.equal(res.headers['x-upstream-got'], '700');
    assert.equal(res.headers['x-upstream-saw'], '700');
    assert.equal(res.headers['x-upstream-later'], '700');
    const deadline = Date.now() + 3000;
    while (log().length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(log(), ['700 {"kind":"body"} 700 bytes -']);
  });

  it('answers 413 to a body past the buffer limit, counting downstream_rq_too_large', async () => {
    const { proxy } = await proxyWith([bodySizer], 512);
    const res = await send(proxy.port, 'POST', '/', {}, 'y'.repeat(600));
    assert.equal(res.status, 413);
    assert.equal(res.body, 'Payload Too Large');
    assert.equal(proxy.counter('http.ingress.downstream_rq_too_large'), 1);
    // A body within the limit still goes through.
    assert.equal((await send(proxy.port, 'POST', '/', {}, 'y'.repeat(500))).headers['x-upstream-got'], '500');
  });

  it('an encoder holding the response sends it whole once it has all of it', async () => {
    const { proxy } = await proxyWith([responseSizer], 4096);
    const res = await send(proxy.port, 'GET', '/?size=3000');
    assert.equal(res.status, 200);
    assert.equal(res.body.length, 3000);
    assert.equal(res.headers['x-response-size'], '3000');
  });

  it('answers 500 when a response outgrows an encoder buffer, counting rs_too_large', async () => {
    const { proxy } = await proxyWith([responseSizer], 1000);
    const res = await send(proxy.port, 'GET', '/?size=3000');
    assert.equal(res.status, 500);
    assert.equal(res.body, 'Internal Server Error');
    assert.equal(proxy.counter('http.ingress.rs_too_large'), 1);
    assert.equal(proxy.gauge('cluster.b.upstream_rq_active'), 0);
  });
});

/** Records what reaches its encoder callbacks; answers nothing. */
function encoderRecorder(seen: string[]): StreamFilterMaker {
  return () => ({
    decodeHeaders: () => CONTINUE,
    encodeHeaders(status) {
      seen.push(`headers ${status}`);
      return CONTINUE;
    },
    encodeData(_s, chunk, end) {
      seen.push(`data ${chunk.toString()}${end ? ' end' : ''}`);
      return CONTINUE;
    },
  });
}

/** Answers every request itself, from its decodeHeaders. */
const denier: StreamFilterMaker = () => ({
  decodeHeaders(s) {
    s.sendLocalReply(403, 'denied by the test');
    return STOP_ITERATION;
  },
});

describe("the proxy's own replies and HTTP/2 trailers through the filters", () => {
  it("a local reply's body passes every encoder's encodeData, whole and with its end, as the reference's", async () => {
    const seen: string[] = [];
    const { proxy } = await proxyWith([encoderRecorder(seen), denier], 1024);
    const res = await send(proxy.port, 'GET', '/');
    assert.equal(res.status, 403);
    assert.equal(res.body, 'denied by the test');
    assert.deepEqual(seen, ['headers 403', 'data denied by the test end']);
    // A HEAD reply has no body for the encoders to see.
    seen.length = 0;
    assert.equal((await send(proxy.port, 'HEAD', '/')).status, 403);
    assert.deepEqual(seen, ['headers 403']);
  });

  it("an HTTP/2 request's trailers reach the decoders' decodeTrailers after its body", async () => {
    const seen: string[] = [];
    const recorder: StreamFilterMaker = () => ({
      decodeHeaders: () => CONTINUE,
      decodeData(_s, chunk, end) {
        seen.push(`data ${chunk.length}${end ? ' end' : ''}`);
        return CONTINUE;
      },
      decodeTrailers(_s, trailers) {
        seen.push(`trailers ${trailers.join('=')}`);
        return CONTINUE;
      },
    });
    const { proxy } = await proxyWith([recorder], 1024);
    const client = http2.connect(`http://127.0.0.1:${proxy.port}`);
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no answer')), 5000);
        const req = client.request(
          { ':method': 'POST', ':path': '/', te: 'trailers' },
          { waitForTrailers: true },
        );
        req.on('wantTrailers', () => req.sendTrailers({ 'x-checksum': 'abc' }));
        req.on('response', (h) => {
          req.resume();
          req.on('end', () => {
            clearTimeout(timer);
            resolve(Number(h[':status']));
          });
        });
        req.on('error', reject);
        req.end('hello');
      });
      assert.equal(status, 200);
      assert.deepEqual(seen, ['data 5', 'trailers x-checksum=abc']);
    } finally {
      client.close();
    }
  });
});
