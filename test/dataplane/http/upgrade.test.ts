/**
 * WebSocket upgrades through the connection manager: an echo server on loopback speaking
 * the RFC 6455 handshake and frames, a client doing the same through the proxy, and the
 * HCM's and routes' `upgrade_configs` deciding which requests may upgrade (others get 403).
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import * as http from 'node:http';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Report } from '../../../src/bootstrap/report.js';
import { compileHcm } from '../../../src/dataplane/http/hcm-config.js';
import { newUpstreamHost } from '../../../src/upstream/host.js';
import { until } from '../../helpers/dataplane.js';
import { startProxy, type TestProxy } from '../../helpers/http-dataplane.js';
import { halfOpenFront } from './hostile-clients.js';

/** A router that adds no `x-proxy-upstream-service-time`, so answers compare byte for byte. */
const SUPPRESSED_ROUTER = {
  name: 'proxy.filters.http.router',
  typed_config: {
    '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router',
    suppress_envoy_headers: true,
  },
};

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const accept = (key: string) =>
  createHash('sha1')
    .update(key + GUID)
    .digest('base64');

/** One text frame (payload under 126 bytes), masked as a client must send it. */
function clientFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  const mask = randomBytes(4);
  const out = Buffer.alloc(6 + payload.length);
  out[0] = 0x81;
  out[1] = 0x80 | payload.length;
  mask.copy(out, 2);
  for (let i = 0; i < payload.length; i++) out[6 + i] = (payload[i] as number) ^ (mask[i % 4] as number);
  return out;
}

/** The payloads of the complete frames in `buf` (unmasking client frames), and the bytes used. */
function readFrames(buf: Buffer): { texts: string[]; used: number } {
  const texts: string[] = [];
  let at = 0;
  while (buf.length - at >= 2) {
    const masked = ((buf[at + 1] as number) & 0x80) !== 0;
    const len = (buf[at + 1] as number) & 0x7f;
    const start = at + 2 + (masked ? 4 : 0);
    if (buf.length < start + len) break;
    const payload = Buffer.from(buf.subarray(start, start + len));
    if (masked)
      for (let i = 0; i < len; i++) payload[i] = (payload[i] as number) ^ (buf[at + 2 + (i % 4)] as number);
    texts.push(payload.toString());
    at = start + len;
  }
  return { texts, used: at };
}

/** An echo WebSocket server: answers each text frame with `echo: <text>`, recording the handshake headers. */
async function echoServer(): Promise<{
  port: number;
  seen: http.IncomingHttpHeaders[];
  server: http.Server;
}> {
  const seen: http.IncomingHttpHeaders[] = [];
  const server = http.createServer((_req, res) => res.end('plain'));
  server.on('upgrade', (req, socket: net.Socket, head: Buffer) => {
    seen.push(req.headers);
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: ${accept(String(req.headers['sec-websocket-key']))}\r\n\r\n`,
    );
    let pending = head;
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      const { texts, used } = readFrames(pending);
      pending = pending.subarray(used);
      for (const t of texts) {
        const reply = Buffer.from(`echo: ${t}`);
        socket.write(Buffer.concat([Buffer.from([0x81, reply.length]), reply]));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as net.AddressInfo).port, seen, server };
}

/** A WebSocket client through `port`: the status line, and the echo of each message once the handshake passed. */
async function talk(
  port: number,
  path: string,
  messages: string[],
  extra = '',
): Promise<{ status: string; echoes: string[]; head: string }> {
  const key = randomBytes(16).toString('base64');
  const socket = net.connect(port, '127.0.0.1');
  let received = Buffer.alloc(0);
  socket.on('data', (c: Buffer) => {
    received = Buffer.concat([received, c]);
  });
  socket.on('error', () => {});
  socket.write(
    `GET ${path} HTTP/1.1\r\nhost: example.com\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-key: ${key}\r\nsec-websocket-version: 13\r\n${extra}\r\n`,
  );
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  await Promise.race([until(() => received.indexOf('\r\n\r\n') >= 0, 5000, 'the handshake answer'), closed]);
  const headEnd = received.indexOf('\r\n\r\n');
  const head = received.subarray(0, headEnd).toString('latin1');
  const status = head.split('\r\n')[0] ?? '';
  if (!status.includes(' 101 ')) {
    socket.destroy();
    return { status, echoes: [], head };
  }
  assert.match(head, new RegExp(`sec-websocket-accept: ${accept(key).replace(/[+/]/g, '\\$&')}`, 'i'));
  const echoes: string[] = [];
  for (const m of messages) {
    socket.write(clientFrame(m));
    await until(
      () => readFrames(received.subarray(headEnd + 4)).texts.length > echoes.length,
      5000,
      `echo of ${m}`,
    );
    echoes.splice(0, echoes.length, ...readFrames(received.subarray(headEnd + 4)).texts);
  }
  socket.end();
  await closed;
  return { status, echoes, head };
}

describe('WebSocket upgrades through the proxy', () => {
  let upstream: Awaited<ReturnType<typeof echoServer>>;
  let proxy: TestProxy;

  before(async () => {
    upstream = await echoServer();
    proxy = await startProxy(
      {
        stat_prefix: 'ingress',
        upgrade_configs: [{ upgrade_type: 'WebSocket' }],
        route_config: {
          name: 'local',
          virtual_hosts: [
            {
              name: 'all',
              domains: ['*'],
              routes: [
                {
                  match: { prefix: '/off' },
                  route: { cluster: 'ws', upgrade_configs: [{ upgrade_type: 'websocket', enabled: false }] },
                },
                {
                  match: { prefix: '/mutated' },
                  route: { cluster: 'ws' },
                  request_headers_to_add: [{ header: { key: 'x-req-added', value: 'yes' } }],
                  request_headers_to_remove: ['x-drop'],
                  response_headers_to_add: [{ header: { key: 'x-added', value: 'yes' } }],
                },
                { match: { prefix: '/' }, route: { cluster: 'ws', prefix_rewrite: '/chat' } },
              ],
            },
          ],
        },
        http_filters: [{ name: 'proxy.filters.http.router' }],
      },
      [{ raw: { name: 'ws', connect_timeout: '1s' }, addresses: [`127.0.0.1:${upstream.port}`] }],
    );
  });

  after(async () => {
    await proxy.close();
    upstream.server.closeAllConnections();
    upstream.server.close();
  });

  it('relays the handshake and frames both ways: an echo through the proxy', async () => {
    const { status, echoes } = await talk(proxy.port, '/room', ['hello', 'second message']);
    assert.match(status, /^HTTP\/1\.1 101 /);
    assert.deepEqual(echoes, ['echo: hello', 'echo: second message']);
    const seen = upstream.seen.at(-1) ?? {};
    assert.equal(seen.upgrade, 'websocket');
    assert.equal(seen['x-forwarded-proto'], 'http', 'the forwarding headers are added');
    assert.equal(proxy.counter('http.ingress.downstream_cx_upgrades_total'), 1);
    await until(
      () => proxy.gauge('http.ingress.downstream_cx_upgrades_active') === 0,
      5000,
      'the tunnel closed',
    );
    assert.equal(proxy.counter('cluster.ws.upstream_rq_101'), 1);
  });

  // Root cause: the upgrade path wrote the request head from the client's fields alone and
  // relayed the upstream's 101 head as it came, so the route's header mutations never acted on
  // either and the 101 went out without `server`; every other response goes through them.
  it("applies the route's header mutations and server header to the upgrade and its 101", async () => {
    const { status, echoes, head } = await talk(proxy.port, '/mutated', ['hi'], 'x-drop: 1\r\n');
    assert.match(status, /^HTTP\/1\.1 101 /);
    assert.deepEqual(echoes, ['echo: hi']);
    assert.match(head, /\r\nx-added: yes\r\n/);
    assert.match(head, /\r\nserver: proxy\r\n/);
    assert.match(head, /\r\nupgrade: websocket(\r\n|$)/i);
    const seen = upstream.seen.at(-1) ?? {};
    assert.equal(seen['x-req-added'], 'yes');
    assert.equal(seen['x-drop'], undefined);
  });

  it('refuses with 403 an upgrade the route disables', async () => {
    const { status } = await talk(proxy.port, '/off', ['x']);
    assert.match(status, /^HTTP\/1\.1 403 /);
  });

  it('answers 503 when the upstream cannot be reached', async () => {
    const dead = net.createServer();
    await new Promise<void>((resolve) => dead.listen(0, '127.0.0.1', resolve));
    const port = (dead.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => dead.close(() => resolve()));
    const cluster = proxy.clusters.get('ws');
    assert.ok(cluster);
    const saved = cluster.hosts[0];
    assert.ok(saved);
    // A member of its own (not a spread of the saved one: its address and stats are getters).
    const host = newUpstreamHost({ ...saved.state, ip: '127.0.0.1', port, address: `127.0.0.1:${port}` });
    proxy.clusters.set('ws', { ...cluster, lb: { choose: () => host } });
    try {
      const { status } = await talk(proxy.port, '/room', []);
      assert.match(status, /^HTTP\/1\.1 503 /);
    } finally {
      proxy.clusters.set('ws', cluster);
    }
  });
});

describe('an upstream that refuses the upgrade', () => {
  // Root cause: the tunnel relayed the client's bytes upstream from the moment the upstream
  // connection was up, whatever the upstream answered. After a refusal (any status but 101) the
  // client's next request went to the upstream raw: `GET /admin` with `x-envoy-internal`
  // passed a route answering /admin itself and the edge's header checks. The reference parses
  // the answer and tunnels only after a 101; nginx and HAProxy do the same.
  let upstream: net.Server;
  const heads: string[] = [];
  let proxy: TestProxy;
  const REFUSALS: Record<string, string> = {
    '/length': 'HTTP/1.1 400 Bad Request\r\ncontent-length: 4\r\n\r\nnope',
    '/chunked': 'HTTP/1.1 426 Upgrade Required\r\ntransfer-encoding: chunked\r\n\r\n4\r\nnope\r\n0\r\n\r\n',
    '/no-body': 'HTTP/1.1 204 No Content\r\n\r\n',
  };
  /** What the client gets of each: the head as any response's (`suppress_envoy_headers`), the body as it came. */
  const RELAYED: Record<string, string> = {
    '/length':
      'HTTP/1.1 400 Bad Request\r\nserver: proxy\r\ncontent-length: 4\r\nconnection: close\r\n\r\nnope',
    '/chunked':
      'HTTP/1.1 426 Upgrade Required\r\nserver: proxy\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n4\r\nnope\r\n0\r\n\r\n',
    '/no-body': 'HTTP/1.1 204 No Content\r\nserver: proxy\r\nconnection: close\r\n\r\n',
  };

  before(async () => {
    upstream = net.createServer((socket) => {
      socket.on('error', () => {});
      let buffered = '';
      socket.on('data', (d: Buffer) => {
        buffered += d.toString('latin1');
        for (let end = buffered.indexOf('\r\n\r\n'); end >= 0; end = buffered.indexOf('\r\n\r\n')) {
          const head = buffered.slice(0, end);
          buffered = buffered.slice(end + 4);
          heads.push(head.split('\r\n')[0] as string);
          // Kept open, as a keep-alive server does: the answer ends by its framing, not a close.
          socket.write(
            REFUSALS[head.split(' ')[1] ?? ''] ?? 'HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nsecret',
          );
        }
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    proxy = await startProxy(
      {
        stat_prefix: 'ingress',
        upgrade_configs: [{ upgrade_type: 'websocket' }],
        route_config: {
          virtual_hosts: [
            {
              name: 'all',
              domains: ['*'],
              routes: [
                { match: { prefix: '/admin' }, direct_response: { status: 403 } },
                { match: { prefix: '/' }, route: { cluster: 'ws' } },
              ],
            },
          ],
        },
        http_filters: [SUPPRESSED_ROUTER],
      },
      [{ raw: { name: 'ws' }, addresses: [`127.0.0.1:${(upstream.address() as net.AddressInfo).port}`] }],
    );
  });

  after(async () => {
    await proxy.close();
    upstream.close();
  });

  const UPGRADE = (path: string) =>
    `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
    'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==\r\n\r\n';
  const SMUGGLED = 'GET /admin HTTP/1.1\r\nHost: x\r\nX-Envoy-Internal: true\r\n\r\n';

  /** Sends the upgrade, then (`laterMs` after, or with it) a request; what came back and whether the proxy closed. */
  function exchange(path: string, laterMs: number | null): Promise<{ answer: string; closed: boolean }> {
    return new Promise((resolve) => {
      const socket = net.connect(proxy.port, '127.0.0.1');
      let answer = '';
      let closed = false;
      socket.on('data', (d: Buffer) => {
        answer += d.toString('latin1');
      });
      socket.on('error', () => {});
      socket.on('close', () => {
        closed = true;
      });
      socket.write(laterMs === null ? UPGRADE(path) + SMUGGLED : UPGRADE(path));
      if (laterMs !== null) setTimeout(() => socket.writable && socket.write(SMUGGLED), laterMs);
      setTimeout(() => {
        socket.destroy();
        resolve({ answer, closed });
      }, 1500);
    });
  }

  // Root cause: after a refusal the client's socket stayed paused (as it is until a 101), so a
  // client that then closed was never noticed: its socket, file descriptor and
  // `downstream_cx_active` were held for ever (and a graceful stop waited on them), whenever
  // the upgrade's head had come in more than one read. Now the socket is read again and
  // closed after `delayed_close_timeout`.
  for (const how of ['end', 'reset'] as const)
    it(`a refusal to a head sent in pieces, then the client leaves (${how}): its connection is closed`, async () => {
      const front = await halfOpenFront(proxy);
      try {
        const socket = net.connect(front.port, '127.0.0.1');
        socket.on('error', () => {});
        let answer = '';
        socket.on('data', (d: Buffer) => {
          answer += d.toString('latin1');
        });
        await new Promise((resolve) => socket.once('connect', resolve));
        const head = UPGRADE('/length');
        for (let at = 0; at < head.length; at += 16) {
          socket.write(head.slice(at, at + 16));
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
        await until(() => answer === RELAYED['/length'], 5000, 'the refusal');
        if (how === 'end') socket.end();
        else socket.resetAndDestroy();
        await until(
          () => proxy.gauge('http.ingress.downstream_cx_active') === 0,
          5000,
          'the connection closed',
        );
        socket.destroy();
      } finally {
        front.close();
      }
    });

  for (const path of Object.keys(REFUSALS))
    it(`${path}: the refusal reaches the client whole, the connection closes, and nothing after the upgrade reaches the upstream`, async () => {
      heads.length = 0;
      const later = await exchange(path, 300);
      assert.equal(later.answer, RELAYED[path]);
      assert.ok(later.closed, 'the proxy closed the connection');
      assert.deepEqual(heads, [`GET ${path} HTTP/1.1`], 'only the upgrade request reached the upstream');
      heads.length = 0;
      const together = await exchange(path, null);
      assert.equal(together.answer, RELAYED[path]);
      assert.deepEqual(heads, [`GET ${path} HTTP/1.1`], 'only the upgrade request reached the upstream');
    });
});

/**
 * Root cause: the upgrade path armed no timer at all, so an upstream that accepted the upgrade
 * and never answered held the client for ever (route `timeout` and `stream_idle_timeout`
 * ignored), and an idle tunnel lived for ever; the reference applies the route timeout until
 * the answer and the stream idle timeout to the whole upgraded stream.
 */
describe('the timeouts of an upgrade', () => {
  let silent: net.Server;
  let upstream: Awaited<ReturnType<typeof echoServer>>;
  const sockets: net.Socket[] = [];
  before(async () => {
    upstream = await echoServer();
    silent = net.createServer((socket) => {
      sockets.push(socket);
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  });
  after(() => {
    for (const socket of sockets) socket.destroy();
    silent.close();
    upstream.server.closeAllConnections();
    upstream.server.close();
  });

  const start = (port: number, route: Record<string, unknown>, hcm: Record<string, unknown> = {}) =>
    startProxy(
      {
        stat_prefix: 'ingress',
        upgrade_configs: [{ upgrade_type: 'websocket' }],
        ...hcm,
        route_config: {
          name: 'local',
          virtual_hosts: [
            {
              name: 'all',
              domains: ['*'],
              routes: [{ match: { prefix: '/' }, route: { cluster: 'ws', ...route } }],
            },
          ],
        },
        http_filters: [{ name: 'proxy.filters.http.router' }],
      },
      [{ raw: { name: 'ws', connect_timeout: '1s' }, addresses: [`127.0.0.1:${port}`] }],
    );

  it('a silent upstream: 504 at the route timeout, upstream_rq_timeout counted', async () => {
    const proxy = await start((silent.address() as net.AddressInfo).port, { timeout: '0.3s' });
    try {
      const began = performance.now();
      const { status } = await talk(proxy.port, '/room', []);
      assert.match(status, /^HTTP\/1\.1 504 /);
      assert.ok(performance.now() - began >= 250);
      assert.equal(proxy.counter('cluster.ws.upstream_rq_timeout'), 1);
      await until(
        () => proxy.gauge('http.ingress.downstream_cx_upgrades_active') === 0,
        5000,
        'the tunnel ended',
      );
    } finally {
      await proxy.close();
    }
  });

  it('a silent upstream: 408 at the stream idle timeout when it comes first', async () => {
    const proxy = await start(
      (silent.address() as net.AddressInfo).port,
      { timeout: '0s' },
      { stream_idle_timeout: '0.3s' },
    );
    try {
      const { status } = await talk(proxy.port, '/room', []);
      assert.match(status, /^HTTP\/1\.1 408 /);
      assert.equal(proxy.counter('http.ingress.downstream_rq_idle_timeout'), 1);
    } finally {
      await proxy.close();
    }
  });

  it("an idle tunnel closes at the route's idle_timeout, traffic restarting it", async () => {
    const proxy = await start(upstream.port, { idle_timeout: '0.4s' });
    try {
      const key = randomBytes(16).toString('base64');
      const socket = net.connect(proxy.port, '127.0.0.1');
      socket.on('error', () => {});
      let received = '';
      socket.on('data', (c: Buffer) => {
        received += c.toString('latin1');
      });
      const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(performance.now())));
      socket.write(
        `GET /room HTTP/1.1\r\nhost: a\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-key: ${key}\r\nsec-websocket-version: 13\r\n\r\n`,
      );
      await until(() => received.includes(' 101 '), 5000, 'the 101');
      // Traffic at 250 ms restarts the count: the tunnel is still open past 400 ms.
      await new Promise((r) => setTimeout(r, 250));
      socket.write(clientFrame('still here'));
      await until(() => received.includes('echo: still here'), 5000, 'the echo');
      const echoed = performance.now();
      const end = await Promise.race([closed, new Promise<number>((r) => setTimeout(() => r(-1), 5000))]);
      socket.destroy();
      assert.ok(end > 0, 'the idle tunnel was closed');
      assert.ok(end - echoed >= 300, `closed ${Math.round(end - echoed)} ms after the last traffic`);
      assert.equal(proxy.counter('http.ingress.downstream_rq_idle_timeout'), 1);
      await until(
        () => proxy.gauge('http.ingress.downstream_cx_upgrades_active') === 0,
        5000,
        'the tunnel ended',
      );
    } finally {
      await proxy.close();
    }
  });
});

/**
 * Root cause: the upstream's answer to an upgrade was relayed to the client as it came, before
 * its head was whole: a malformed head sent in two reads reached the client in part (then the
 * connection was reset), one in a single read was a reset with no answer, and a 100 Continue
 * before the 101 was taken for the answer (bodiless), ending the upgrade. Heads are now held
 * until whole: a malformed one is a 502 (`UPE`), interim answers are dropped.
 */
describe('hostile answers to an upgrade', () => {
  let upstream: net.Server;
  let proxy: TestProxy;
  const sockets: net.Socket[] = [];
  const ANSWERS: Record<string, Array<string>> = {
    '/split-bad': ['HTTP/1.1 200 OK\r\nX-A: 1\r\n', 'X-B: \x01\r\ncontent-length: 0\r\n\r\n'],
    '/bad': ['HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\nhello'],
    '/interim': [
      'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n\r\n',
    ],
  };

  before(async () => {
    upstream = net.createServer((socket) => {
      sockets.push(socket);
      socket.on('error', () => {});
      socket.once('data', (d: Buffer) => {
        const parts = ANSWERS[d.toString('latin1').split(' ')[1] ?? ''] ?? [];
        parts.forEach((part, i) => {
          setTimeout(() => socket.write(part, 'latin1'), i * 100);
        });
        socket.on('data', (more: Buffer) => socket.write(more));
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    proxy = await startProxy(
      {
        stat_prefix: 'ingress',
        upgrade_configs: [{ upgrade_type: 'websocket' }],
        route_config: {
          virtual_hosts: [
            { name: 'all', domains: ['*'], routes: [{ match: { prefix: '/' }, route: { cluster: 'ws' } }] },
          ],
        },
        http_filters: [SUPPRESSED_ROUTER],
      },
      [{ raw: { name: 'ws' }, addresses: [`127.0.0.1:${(upstream.address() as net.AddressInfo).port}`] }],
    );
  });

  after(async () => {
    await proxy.close();
    for (const socket of sockets) socket.destroy();
    upstream.close();
  });

  async function upgrade(path: string, after = ''): Promise<string> {
    const socket = net.connect(proxy.port, '127.0.0.1');
    socket.on('error', () => {});
    let answer = '';
    socket.on('data', (d: Buffer) => {
      answer += d.toString('latin1');
      if (after !== '' && answer.includes('\r\n\r\n') && !answer.includes(after)) socket.write(after);
    });
    const closed = new Promise((resolve) => socket.on('close', resolve));
    socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`);
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 1000))]);
    socket.destroy();
    return answer;
  }

  for (const path of ['/split-bad', '/bad'])
    it(`${path}: a malformed answer is a 502, nothing of it relayed`, async () => {
      const before = proxy.counter('cluster.ws.upstream_cx_protocol_error');
      const answer = await upgrade(path);
      assert.match(answer, /^HTTP\/1\.1 502 Bad Gateway\r\n/);
      assert.ok(answer.endsWith('reset reason: protocol error'), answer);
      assert.equal(proxy.counter('cluster.ws.upstream_cx_protocol_error'), before + 1);
    });

  it('/interim: a 100 Continue before the 101 is dropped and the tunnel opens', async () => {
    const answer = await upgrade('/interim', 'ping');
    assert.equal(
      answer,
      'HTTP/1.1 101 Switching Protocols\r\nserver: proxy\r\nconnection: upgrade\r\nupgrade: websocket\r\n\r\nping',
    );
  });
});

describe('upgrade_configs compile', () => {
  const compile = (upgrades: unknown) => {
    const report = new Report('test');
    compileHcm(
      {
        stat_prefix: 's',
        upgrade_configs: upgrades as never,
        route_config: { virtual_hosts: [{ name: 'v', domains: ['*'], routes: [] }] },
        http_filters: [{ name: 'envoy.router' }],
      },
      'hcm',
      report,
    );
    // Only the upgrade findings: the filter chain here is not in canonical (resolved) form.
    return report.problems
      .filter((p) => p.path.includes('upgrade_configs'))
      .map((p) => `${p.path}: ${p.message}`)
      .join('\n');
  };

  it('refuses CONNECT and per-upgrade filters, requires the type', () => {
    assert.match(
      compile([{ upgrade_type: 'CONNECT' }]),
      /hcm\.upgrade_configs\[0\]\.upgrade_type: CONNECT tunnels are not implemented/,
    );
    assert.match(
      compile([{ upgrade_type: 'websocket', filters: [] }]),
      /upgrade_configs\[0\]\.filters: per-upgrade filter chains/,
    );
    assert.match(compile([{ enabled: true }]), /upgrade_configs\[0\]\.upgrade_type: required field missing/);
    assert.equal(compile([{ upgrade_type: 'websocket', enabled: false }]), '');
  });
});
