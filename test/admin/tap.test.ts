/**
 * `POST /tap` over a real admin connection of a real proxy process: traces of requests that
 * went through a real listener to a real upstream stream back as JSON lines until the client
 * disconnects.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { hcmWithRoutes, httpBootstrap } from '../helpers/bootstraps.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';

const TAP_TYPE = 'type.googleapis.com/envoy.config.filter.http.tap.v2alpha.Tap';

let upstream: http.Server;
let bootstrap: JsonObject;
/** The proxy of the suite running (suites run one after the other). */
let proxy: ProxyProcess;
let port = 0;

before(async () => {
  upstream = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.setHeader('x-upstream', req.url === '/mark' ? 'marked' : 'plain');
      res.end(`echo:${Buffer.concat(chunks).toString()}:0123456789`);
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const upPort = (upstream.address() as net.AddressInfo).port;
  const hcm = hcmWithRoutes([{ match: { prefix: '/' }, route: { cluster: 'up' } }]);
  hcm.http_filters = [
    {
      name: 'proxy.filters.http.tap',
      typed_config: { '@type': TAP_TYPE, common_config: { admin_config: { config_id: 'test_tap' } } },
    },
    { name: 'envoy.filters.http.router' },
  ];
  const cluster = {
    name: 'up',
    connect_timeout: '1s',
    type: 'STATIC',
    load_assignment: {
      cluster_name: 'up',
      endpoints: [
        {
          lb_endpoints: [
            { endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: upPort } } } },
          ],
        },
      ],
    },
  };
  bootstrap = httpBootstrap([cluster], hcm);
});

after(() => upstream?.close());

interface TraceHeader {
  key: string;
  value: string;
}
interface TraceMessage {
  headers: TraceHeader[];
  body?: Record<string, unknown>;
}
/** A `TraceWrapper` as the admin streams it. */
interface Trace {
  http_buffered_trace: { request: TraceMessage; response: TraceMessage };
}

/** An open `/tap` stream: its status, the traces received so far, and a way to hang up. */
interface TapStream {
  status: number;
  body: () => string;
  traces: () => Trace[];
  close: () => void;
  closed: Promise<void>;
}

function openTap(body: string): Promise<TapStream> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${proxy.admin}/tap`, { method: 'POST', agent: false }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (data += c));
      const closed = new Promise<void>((r) => res.on('close', () => r()));
      resolve({
        status: res.statusCode ?? 0,
        body: () => data,
        traces: () =>
          data
            .split('\n')
            .filter(Boolean)
            .map((line) => JSON.parse(line) as Trace),
        close: () => req.destroy(),
        closed,
      });
    });
    req.on('error', (err) => (err.message.includes('socket hang up') ? undefined : reject(err)));
    req.setTimeout(10_000, () => reject(new Error('no /tap answer in 10 s')));
    req.end(body);
  });
}

function send(path: string, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: body ? 'POST' : 'GET',
        agent: false,
        headers: { 'x-who': 'tester' },
      },
      (res) => {
        let data = '';
        res.on('data', (c) => (data += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }));
      },
    );
    req.on('error', reject);
    req.setTimeout(5000, () => reject(new Error(`no answer for ${path}`)));
    req.end(body);
  });
}

async function until(check: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const header = (list: TraceHeader[] | undefined, key: string) => list?.find((h) => h.key === key)?.value;

for (const concurrency of [1, 2])
  describe(`POST /tap with --concurrency ${concurrency}`, () => {
    before(async () => {
      proxy = await startProxyProcess(bootstrap, ['--concurrency', String(concurrency)]);
      port = await proxy.listenerPort('http');
    });
    after(() => proxy?.stop());

    it('streams the trace of a matching request and none of a non-matching one; hanging up detaches', async () => {
      const tap = await openTap(
        JSON.stringify({
          config_id: 'test_tap',
          tap_config: {
            match_config: {
              and_match: {
                rules: [
                  { http_request_headers_match: { headers: [{ name: 'x-who', exact_match: 'tester' }] } },
                  {
                    http_response_headers_match: { headers: [{ name: 'x-upstream', exact_match: 'marked' }] },
                  },
                ],
              },
            },
            output_config: {
              sinks: [{ format: 'JSON_BODY_AS_STRING', streaming_admin: {} }],
              max_buffered_rx_bytes: 4,
              max_buffered_tx_bytes: 8,
            },
          },
        }),
      );
      assert.equal(tap.status, 200, tap.body());
      assert.equal((await send('/plain', 'ignored')).status, 200);
      const marked = await send('/mark', 'hello world');
      assert.equal(marked.body, 'echo:hello world:0123456789');
      await until(() => tap.traces().length >= 1, 'a trace');
      // The plain request ended before the marked one was sent: had it matched, it would be first.
      const traces = tap.traces();
      assert.equal(traces.length, 1, tap.body());
      const trace = traces[0]!.http_buffered_trace;
      assert.equal(header(trace.request.headers, ':path'), '/mark');
      assert.equal(header(trace.request.headers, ':method'), 'POST');
      assert.equal(header(trace.request.headers, 'x-who'), 'tester');
      assert.deepEqual(trace.request.body, { as_string: 'hell', truncated: true });
      assert.equal(header(trace.response.headers, ':status'), '200');
      assert.equal(header(trace.response.headers, 'x-upstream'), 'marked');
      assert.deepEqual(trace.response.body, { as_string: 'echo:hel', truncated: true });

      // A second session on the same id is refused while the first is attached.
      const second = await openTap(JSON.stringify({ config_id: 'test_tap', tap_config: anyMatch() }));
      assert.equal(second.status, 400);
      await second.closed;
      assert.match(second.body(), /already exists/);

      tap.close();
      await tap.closed;
      // Once detached, a new session attaches and sees the next request (bodies as base64).
      let again: TapStream;
      const deadline = Date.now() + 5000;
      for (;;) {
        const attempt = await openTap(JSON.stringify({ config_id: 'test_tap', tap_config: anyMatch() }));
        if (attempt.status === 200) {
          again = attempt;
          break;
        }
        await attempt.closed;
        if (Date.now() > deadline) throw new Error(`the first session never detached: ${attempt.body()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      await send('/plain', 'xy');
      await until(() => again!.traces().length >= 1, 'a trace of the second session');
      const body = again.traces()[0]!.http_buffered_trace.request.body;
      assert.deepEqual(body, { as_bytes: Buffer.from('xy').toString('base64'), truncated: false });
      again.close();
      await again.closed;
    });

    it('answers 400 for an unknown config id and for a sink other than streaming_admin', async () => {
      const unknown = await openTap(JSON.stringify({ config_id: 'nope', tap_config: anyMatch() }));
      await unknown.closed;
      assert.equal(unknown.status, 400);
      assert.match(unknown.body(), /Unknown config id 'nope'/);
      const fileSink = await openTap(
        `config_id: test_tap\ntap_config:\n  match_config: { any_match: true }\n  output_config:\n    sinks: [{ file_per_tap: { path_prefix: /tmp/x } }]\n`,
      );
      await fileSink.closed;
      assert.equal(fileSink.status, 400);
      assert.match(fileSink.body(), /file_per_tap/);
    });
  });

function anyMatch() {
  return { match_config: { any_match: true }, output_config: { sinks: [{ streaming_admin: {} }] } };
}
