/**
 * Connections opened and closed without a byte (Kubernetes `tcpSocket` probes, load-balancer
 * TCP checks, HAProxy `check`, `nc -z`) leave nothing behind (issue 25).
 * Root cause: listeners accept with `allowHalfOpen` (the TCP proxy relays half-closes), and
 * the connection manager's first stage, which reads the first bytes to choose HTTP/1 or
 * HTTP/2, and the listener's ClientHello peek listened for 'close' but not for the peer's FIN:
 * a peer that closed before its first byte left the socket in CLOSE-WAIT and counted in
 * `downstream_cx_active` for ever, and a SIGTERM then drained for --drain-time-s waiting for it.
 * Nor did that first stage have any deadline: `idle_timeout` only started with the codec.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as net from 'node:net';
import { before, describe, test } from 'node:test';
import * as tls from 'node:tls';
import type { JsonObject } from '../../events/index.js';
import { HCM_TYPE, LOOPBACK_ADMIN } from '../helpers/bootstraps.js';
import { cleanupsAfterAll } from '../helpers/cleanups.js';
import { cluster, tcpListener, tcpServer } from '../helpers/dataplane.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';
import { makePki, type TestPki } from '../tls/certs.js';

const PROBES = 1000;
const DOWNSTREAM_TLS = 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext';

const cleanups = cleanupsAfterAll();

let pki: TestPki;
let echoPort = 0;
before(async () => {
  pki = makePki();
  cleanups.push(() => pki.remove());
  const echo = await tcpServer((socket) => socket.pipe(socket));
  cleanups.push(echo.close);
  echoPort = echo.port;
});

function tlsTransport(): JsonObject {
  const leaf = pki.leaf('probe', ['DNS:probe.test']);
  return {
    transport_socket: {
      name: 'envoy.transport_sockets.tls',
      typed_config: {
        '@type': DOWNSTREAM_TLS,
        common_tls_context: {
          tls_certificates: [
            { certificate_chain: { filename: leaf.cert }, private_key: { filename: leaf.key } },
          ],
        },
      },
    },
  };
}

function hcmListener(
  name: string,
  chainExtra: JsonObject,
  listenerExtra: JsonObject,
  hcm: JsonObject,
): JsonObject {
  return {
    name,
    address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
    ...listenerExtra,
    filter_chains: [
      {
        ...chainExtra,
        filters: [
          {
            name: 'envoy.filters.network.http_connection_manager',
            typed_config: {
              '@type': HCM_TYPE,
              stat_prefix: name,
              route_config: {
                virtual_hosts: [
                  {
                    name: 'all',
                    domains: ['*'],
                    routes: [
                      {
                        match: { prefix: '/' },
                        direct_response: { status: 200, body: { inline_string: 'ok' } },
                      },
                    ],
                  },
                ],
              },
              http_filters: [{ name: 'envoy.filters.http.router' }],
              ...hcm,
            },
          },
        ],
      },
    ],
  };
}

const INSPECTOR = { listener_filters: [{ name: 'envoy.filters.listener.tls_inspector' }] };

/** Every kind of listener a probe meets: plain and TLS, HTTP and TCP proxy, with and without a ClientHello peek. */
function bootstrap(hcm: JsonObject = {}): JsonObject {
  const tcp = { stat_prefix: 'echo', cluster: 'echo' };
  return {
    admin: LOOPBACK_ADMIN,
    static_resources: {
      clusters: [cluster('echo', [echoPort])],
      listeners: [
        hcmListener('http', {}, {}, hcm),
        hcmListener('https', tlsTransport(), {}, hcm),
        hcmListener('https_inspected', tlsTransport(), INSPECTOR, hcm),
        tcpListener('tcp', tcp),
        tcpListener('tcps', tcp, { filter_chains: [{ ...tlsTransport(), filters: tcpFilters(tcp) }] }),
      ],
    },
  };
}

function tcpFilters(tcp: JsonObject): JsonObject[] {
  return [
    {
      name: 'envoy.filters.network.tcp_proxy',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy',
        ...tcp,
      },
    },
  ];
}

const LISTENERS = ['http', 'https', 'https_inspected', 'tcp', 'tcps'];

/**
 * Connects and closes: most without a byte, with a FIN (`nc -z`, most probes); every seventh
 * with a RST; and, so every codec state is met, some after the HTTP/2 preface or half an
 * HTTP/1 request head.
 */
function probe(port: number, i: number): Promise<void> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const timer = setTimeout(() => socket.destroy(), 5000);
    socket.once('connect', () => {
      if (i % 7 === 6) socket.resetAndDestroy();
      else if (i % 7 === 5) socket.end('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
      else if (i % 7 === 4) socket.end('GET / HTTP/1.1\r\n');
      else socket.end();
    });
    socket.on('error', () => {});
    socket.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
    // Read the proxy's own FIN so this side closes too.
    socket.resume();
  });
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function activeConnections(proxy: ProxyProcess): Promise<string> {
  const res = await proxy.get('/stats?filter=downstream_cx_active$');
  return res.body
    .split('\n')
    .filter((line) => line.startsWith('listener.') && !line.endsWith(': 0'))
    .join('\n');
}

/** The proxy's sockets on `ports` in CLOSE-WAIT, as `ss` lists them. */
function closeWait(ports: number[]): string[] {
  const out = execFileSync('ss', ['-Htan', 'state', 'close-wait'], { encoding: 'utf8' });
  return out
    .split('\n')
    .filter((line) => ports.some((p) => line.split(/\s+/).some((field) => field.endsWith(`:${p}`))));
}

function exitTime(proxy: ProxyProcess): Promise<number> {
  const started = performance.now();
  return new Promise((resolve) => {
    proxy.child.once('exit', () => resolve(performance.now() - started));
    proxy.child.kill('SIGTERM');
  });
}

for (const concurrency of [1, 2]) {
  describe(`--concurrency ${concurrency}`, () => {
    test(`${PROBES} connect-and-close probes leave no connection behind, and SIGTERM exits at once`, async (t) => {
      const proxy = await startProxyProcess(bootstrap(), ['--concurrency', String(concurrency)]);
      cleanups.push(proxy.stop);
      const ports = await Promise.all(LISTENERS.map((l) => proxy.listenerPort(l)));
      for (let sent = 0; sent < PROBES; sent += 50)
        await Promise.all(
          Array.from({ length: 50 }, (_, i) => probe(ports[(sent + i) % ports.length] as number, sent + i)),
        );
      await until(
        async () => (await activeConnections(proxy)) === '',
        'downstream_cx_active to return to 0',
      ).catch(async (err: Error) => assert.fail(`${err.message}:\n${await activeConnections(proxy)}`));
      const total = await proxy.get('/stats?filter=^listener\\..*downstream_cx_total$');
      const counted = total.body
        .trim()
        .split('\n')
        .reduce((sum, line) => sum + Number(line.split(': ')[1]), 0);
      assert.equal(counted, PROBES, `every probe was accepted and counted:\n${total.body}`);
      assert.deepEqual(closeWait(ports), [], 'no socket left in CLOSE-WAIT');
      const ms = await exitTime(proxy);
      t.diagnostic(`SIGTERM to exit: ${Math.round(ms)} ms`);
      assert.ok(ms < 1000, `SIGTERM exited in ${Math.round(ms)} ms`);
    });
  });
}

/** Milliseconds until the proxy closes `socket` (which reads and sends nothing); 10 s at most. */
function msUntilClosed(socket: net.Socket): Promise<number> {
  const started = performance.now();
  return new Promise((resolve) => {
    const timer = setTimeout(() => socket.destroy(), 10_000);
    socket.on('error', () => {});
    socket.resume();
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(performance.now() - started);
    });
  });
}

test('a connection that never sends a byte is closed by idle_timeout, on every HTTP listener', async () => {
  const proxy = await startProxyProcess(
    bootstrap({ common_http_protocol_options: { idle_timeout: '0.3s' } }),
  );
  cleanups.push(proxy.stop);
  for (const name of ['http', 'https', 'https_inspected']) {
    const port = await proxy.listenerPort(name);
    // The TLS listeners get a handshake first; then nothing.
    const ms = await msUntilClosed(
      name === 'http'
        ? net.connect(port, '127.0.0.1')
        : tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false, servername: 'probe.test' }),
    );
    assert.ok(ms < 5000, `${name}: closed after ${Math.round(ms)} ms`);
    assert.ok(ms >= 250, `${name}: not before the idle timeout (${Math.round(ms)} ms)`);
  }
  // Silent from the first byte on, a TLS connection is held to the same deadline in its
  // handshake. (Behind a ClientHello peek, listener_filters_timeout applies first: 15 s.)
  const silent = await msUntilClosed(net.connect(await proxy.listenerPort('https'), '127.0.0.1'));
  assert.ok(silent < 5000, `https, no ClientHello: closed after ${Math.round(silent)} ms`);
  const idle = await proxy.get('/stats?filter=downstream_cx_idle_timeout$');
  for (const name of ['http', 'https', 'https_inspected'])
    assert.match(idle.body, new RegExp(`^http\\.${name}\\.downstream_cx_idle_timeout: 1$`, 'm'));
});
