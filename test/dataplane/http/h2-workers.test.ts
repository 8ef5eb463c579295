/**
 * The HTTP/2 downstream codec with `--concurrency 2` (the main thread and one worker, the
 * kernel spreading connections over both with SO_REUSEPORT): many h2c and h2-over-TLS (ALPN)
 * connections and a gRPC call are each answered whole, and `/stats` adds up both threads'
 * `http2.*` and `downstream_*` counters exactly (the workers' stats merge periodically, so
 * the test polls with a generous bound).
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import type { JsonObject } from '../../../events/index.js';
import { HCM_TYPE, LOOPBACK_ADMIN } from '../../helpers/bootstraps.js';
import { cluster } from '../../helpers/dataplane.js';
import { echoServer, rawMethod } from '../../helpers/grpc-upstream.js';
import { FRAME, headersFrame, outcome, rawH2 } from '../../helpers/h2-frames.js';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';
import { makePki, type TestPki } from '../../tls/certs.js';

/** Connections per listener: with this many, both threads serve some but for a 2^-23 chance. */
const CONNECTIONS = 24;
const REQUESTS_PER_CONNECTION = 3;
/** Connections each sending one malformed stream (an uppercase field name), then a good one. */
const MALFORMED_CONNECTIONS = 8;

let proxy: ProxyProcess;
let pki: TestPki;
let h2cPort = 0;
let tlsPort = 0;
const cleanups: Array<() => Promise<void> | void> = [];

function hcm(statPrefix: string): JsonObject {
  return {
    name: 'envoy.filters.network.http_connection_manager',
    typed_config: {
      '@type': HCM_TYPE,
      stat_prefix: statPrefix,
      route_config: {
        virtual_hosts: [
          {
            name: 'all',
            domains: ['*'],
            routes: [
              { match: { prefix: '/test.Echo/' }, route: { cluster: 'grpc' } },
              { match: { prefix: '/' }, route: { cluster: 'origin' } },
            ],
          },
        ],
      },
      http_filters: [{ name: 'envoy.filters.http.router' }],
    },
  };
}

function listener(name: string, chain: JsonObject): JsonObject {
  return {
    name,
    address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
    filter_chains: [chain],
  };
}

before(async () => {
  const origin = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end(`${req.method} ${req.url}`));
  });
  await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
  cleanups.push(() => {
    origin.closeAllConnections();
    origin.close();
  });
  const echo = await echoServer();
  cleanups.push(echo.close);
  pki = makePki();
  cleanups.push(() => pki.remove());
  const leaf = pki.leaf('h2.test', ['DNS:h2.test']);
  proxy = await startProxyProcess(
    {
      admin: LOOPBACK_ADMIN,
      static_resources: {
        clusters: [
          cluster('origin', [(origin.address() as AddressInfo).port]),
          cluster('grpc', [echo.port], { http2_protocol_options: {} }),
        ],
        listeners: [
          listener('h2c', { filters: [hcm('h2c')] }),
          listener('h2tls', {
            filters: [hcm('h2tls')],
            transport_socket: {
              name: 'envoy.transport_sockets.tls',
              typed_config: {
                '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext',
                common_tls_context: {
                  alpn_protocols: ['h2', 'http/1.1'],
                  tls_certificates: [
                    { certificate_chain: { filename: leaf.cert }, private_key: { filename: leaf.key } },
                  ],
                },
              },
            },
          }),
        ],
      },
    },
    ['--concurrency', '2'],
  );
  cleanups.push(proxy.stop);
  h2cPort = await proxy.listenerPort('h2c');
  tlsPort = await proxy.listenerPort('h2tls');
});

after(async () => {
  for (const c of cleanups.reverse()) await c();
});

function get(session: http2.ClientHttp2Session, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer to ${path}`)), 30_000);
    const s = session.request({ ':path': path, ':authority': 'h2.test' });
    let status = 0;
    let body = '';
    s.setEncoding('utf8');
    s.on('response', (h) => {
      status = Number(h[':status']);
    });
    s.on('data', (c: string) => {
      body += c;
    });
    s.on('end', () => {
      clearTimeout(timer);
      resolve({ status, body });
    });
    s.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** `CONNECTIONS` sessions at once, each with its requests in flight together; every answer checked. */
async function traffic(connect: () => http2.ClientHttp2Session, tag: string): Promise<void> {
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async (_, c) => {
      const session = connect();
      session.on('error', () => {});
      try {
        const paths = Array.from({ length: REQUESTS_PER_CONNECTION }, (_, r) => `/${tag}/${c}/${r}`);
        const answers = await Promise.all(paths.map((p) => get(session, p)));
        assert.deepEqual(
          answers,
          paths.map((p) => ({ status: 200, body: `GET ${p}` })),
        );
      } finally {
        session.destroy();
      }
    }),
  );
}

/** `/stats` counters whose names match `pattern`. */
async function counters(pattern: RegExp): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const line of (await proxy.get('/stats')).body.split('\n')) {
    const [name, value] = line.split(': ');
    if (name && value !== undefined && pattern.test(name)) out[name] = Number(value);
  }
  return out;
}

/** Polls `/stats` until `expected` holds exactly, at most 60 s (the merge is periodic; the machine is loaded). */
async function statsReach(pattern: RegExp, expected: Record<string, number>): Promise<void> {
  const deadline = Date.now() + 60_000;
  let seen: Record<string, number> = {};
  for (;;) {
    seen = await counters(pattern);
    const picked = Object.fromEntries(Object.keys(expected).map((k) => [k, seen[k]]));
    if (JSON.stringify(picked) === JSON.stringify(expected)) return;
    if (Date.now() > deadline) assert.deepEqual(picked, expected, 'the threads\u2019 counters, summed');
    await new Promise((r) => setTimeout(r, 250));
  }
}

test('h2c: every request on many connections is answered; /stats sums both threads exactly', async () => {
  await traffic(() => http2.connect(`http://127.0.0.1:${h2cPort}`), 'h2c');
  const requests = CONNECTIONS * REQUESTS_PER_CONNECTION;
  await statsReach(/^http\.h2c\./, {
    'http.h2c.downstream_cx_http2_total': CONNECTIONS,
    'http.h2c.downstream_cx_total': CONNECTIONS,
    'http.h2c.downstream_rq_http2_total': requests,
    'http.h2c.downstream_rq_total': requests,
    'http.h2c.downstream_rq_2xx': requests,
    'http.h2c.downstream_cx_http2_active': 0,
  });
});

test('h2 over TLS (ALPN h2): every request on many connections is answered; /stats sums both threads', async () => {
  await traffic(
    () =>
      http2.connect(`https://127.0.0.1:${tlsPort}`, {
        ca: pki.ca.certPem,
        servername: 'h2.test',
        ALPNProtocols: ['h2'],
      }),
    'tls',
  );
  const requests = CONNECTIONS * REQUESTS_PER_CONNECTION;
  await statsReach(/^http\.h2tls\./, {
    'http.h2tls.downstream_cx_http2_total': CONNECTIONS,
    'http.h2tls.downstream_rq_http2_total': requests,
    'http.h2tls.downstream_rq_2xx': requests,
    'http.h2tls.downstream_cx_http2_active': 0,
    'http.h2tls.downstream_cx_ssl_total': CONNECTIONS,
    'http.h2tls.downstream_cx_ssl_active': 0,
  });
});

test('malformed streams on connections of both threads: http2.rx_messaging_error is their exact sum', async () => {
  const before = (await counters(/^http2\.rx_messaging_error$/))['http2.rx_messaging_error'] ?? 0;
  const get: Array<[string, string]> = [
    [':method', 'GET'],
    [':scheme', 'http'],
    [':path', '/after-malformed'],
    [':authority', 'h2.test'],
  ];
  await Promise.all(
    Array.from({ length: MALFORMED_CONNECTIONS }, async () => {
      const conn = await rawH2(h2cPort);
      try {
        conn.send(headersFrame(1, [...get, ['X-Up', 'v']], true));
        conn.send(headersFrame(3, get, true));
        const frames = await conn.until(
          (f) => outcome(f, 1) !== 'nothing' && f.some((x) => x.streamId === 3 && x.type === FRAME.DATA),
          30_000,
        );
        assert.equal(outcome(frames, 1), 'RST_STREAM 1', 'the malformed stream is reset with PROTOCOL_ERROR');
        assert.equal(outcome(frames, 3), 'response', 'the connection goes on');
      } finally {
        conn.socket.destroy();
      }
    }),
  );
  await statsReach(/^http2\.rx_messaging_error$/, {
    'http2.rx_messaging_error': before + MALFORMED_CONNECTIONS,
  });
});

test('a gRPC unary call over the codec, on several connections: each answered, counted once', async () => {
  const ECHO = grpc.makeGenericClientConstructor(
    { Echo: rawMethod('/test.Echo/Echo', false, false) },
    'Echo',
  );
  const calls = 6;
  const answers = await Promise.all(
    Array.from({ length: calls }, (_, i) => {
      // A channel per call: grpc-js would share one connection, and so one thread.
      const client = new ECHO(`127.0.0.1:${h2cPort}`, grpc.credentials.createInsecure(), {
        'grpc.use_local_subchannel_pool': 1,
      });
      return new Promise<string>((resolve, reject) =>
        client.makeUnaryRequest(
          '/test.Echo/Echo',
          (b: Buffer) => b,
          (b: Buffer) => b,
          Buffer.from(`m${i}`),
          { deadline: Date.now() + 30_000 },
          (err: grpc.ServiceError | null, reply?: Buffer) => {
            client.close();
            if (err) reject(err);
            else resolve(String(reply));
          },
        ),
      );
    }),
  );
  assert.deepEqual(
    answers,
    Array.from({ length: calls }, (_, i) => `echo:m${i}`),
  );
  await statsReach(/^cluster\.grpc\./, { 'cluster.grpc.upstream_rq_total': calls });
});
