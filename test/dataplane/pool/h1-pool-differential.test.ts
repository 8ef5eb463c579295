/**
 * Hostile-upstream differential test (issue 25): one scripted raw-socket origin answers each
 * path with the bytes a broken or hostile server sends; the proxy, nginx and HAProxy stand in
 * front of it, and a client asks for the path, then (on the same connection) for a plain one.
 * What the client gets (the first answer's status and body, and whether the second request got
 * the origin's own answer rather than bytes left over from the first) is compared. No case may
 * desynchronise the proxy's pooled connections: every late, excess or smuggled byte dies with
 * its connection. Every case where a peer answers otherwise on purpose names its reason.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, test } from 'node:test';
import { type Haproxy, hasHaproxy, NO_HAPROXY, startHaproxy } from '../../helpers/haproxy.js';
import { hcmConfig, startProxy, type TestProxy } from '../../helpers/http-dataplane.js';
import { hasNginx, NO_NGINX, type Nginx, startNginx } from '../../helpers/nginx.js';

type Peer = 'proxy' | 'nginx' | 'haproxy';

interface Case {
  path: string;
  /** What the origin writes at once; `later` 50 ms after; `close`: it then closes. */
  now: string;
  later?: string;
  close?: boolean;
  /** `status:body` of the first answer, then `+fresh` when the second request was answered by the origin. */
  proxy: string;
  differs?: Partial<Record<Exclude<Peer, 'proxy'>, string>>;
}

const SMUGGLED = 'HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsmuggl';
const ok = (head: string) => `HTTP/1.1 200 OK\r\n${head}Content-Length: 2\r\n\r\nok`;
const UPE =
  '502:upstream connect error or disconnect/reset before headers. reset reason: protocol error+fresh';
const PASS_THROUGH = (what: string) =>
  `passes ${what} on; the reference refuses it as an upstream protocol error (502)`;

const CASES: Case[] = [
  {
    path: '/cl-short',
    now: `HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok${SMUGGLED}`,
    proxy: '200:ok+fresh',
  },
  {
    path: '/cl-short-late',
    now: 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok',
    later: SMUGGLED,
    proxy: '200:ok+fresh',
  },
  {
    path: '/204-with-body',
    now: 'HTTP/1.1 204 No Content\r\nContent-Length: 6\r\n\r\n',
    later: SMUGGLED,
    proxy: '204:+fresh',
  },
  { path: '/304-with-body', now: `HTTP/1.1 304 Not Modified\r\n\r\n${SMUGGLED}`, proxy: '304:+fresh' },
  {
    path: '/cl-long-close',
    now: 'HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort',
    close: true,
    proxy: '200:short',
  },
  {
    path: '/two-cl',
    now: 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nokk',
    proxy: UPE,
    differs: { nginx: 'nginx takes one of two different lengths' },
  },
  {
    path: '/two-equal-cl',
    now: ok('Content-Length: 2\r\n'),
    proxy: UPE,
    differs: {
      nginx: 'nginx takes equal duplicate lengths; the reference refuses any duplicate',
      haproxy: 'HAProxy folds equal duplicate lengths (RFC 9110 8.6); the reference refuses any duplicate',
    },
  },
  {
    path: '/chunked-and-cl',
    now: 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n',
    proxy: UPE,
    differs: {
      nginx: 'nginx frames by Transfer-Encoding; the reference refuses both (allow_chunked_length unset)',
      haproxy: 'HAProxy frames by Transfer-Encoding; the reference refuses both (allow_chunked_length unset)',
    },
  },
  {
    path: '/status-600',
    now: 'HTTP/1.1 600 Weird\r\nContent-Length: 2\r\n\r\nok',
    proxy: UPE,
    differs: { nginx: PASS_THROUGH('status 600'), haproxy: PASS_THROUGH('status 600') },
  },
  {
    path: '/status-line-http2',
    now: 'HTTP/2.0 200 OK\r\nContent-Length: 2\r\n\r\nok',
    proxy: UPE,
    differs: {
      nginx: PASS_THROUGH('an HTTP/2.0 status line'),
      haproxy: PASS_THROUGH('an HTTP/2.0 status line'),
    },
  },
  {
    path: '/obs-fold',
    now: ok('X-A: a\r\n b\r\n'),
    proxy: UPE,
    differs: {
      haproxy: 'HAProxy unfolds obs-fold (RFC 9112 5.2 lets a recipient); the reference and nginx refuse it',
    },
  },
  {
    path: '/nul-in-value',
    now: ok('X-A: a\0b\r\n'),
    proxy: UPE,
    differs: { haproxy: PASS_THROUGH('a NUL in a value') },
  },
  { path: '/huge-head', now: ok(`X-A: ${'a'.repeat(100_000)}\r\n`), proxy: UPE },
  {
    path: '/te-gzip-chunked',
    now: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n',
    proxy: UPE,
    differs: { nginx: PASS_THROUGH('an unknown transfer coding') },
  },
  {
    path: '/unsolicited-101',
    now: `HTTP/1.1 101 Switching Protocols\r\nUpgrade: foo\r\nConnection: upgrade\r\n\r\n${SMUGGLED}`,
    proxy: UPE,
    differs: { nginx: 'nginx switches protocols and closes the client connection' },
  },
  {
    path: '/status-199-first',
    now: `HTTP/1.1 199 Weird\r\n\r\n${ok('')}`,
    proxy: '200:ok+fresh',
    differs: {
      nginx: 'nginx fails on an interim status other than 100',
      haproxy: 'HAProxy forwards the 199; the reference drops interim answers other than 100 and 101',
    },
  },
  {
    path: '/no-length-then-close',
    now: 'HTTP/1.1 200 OK\r\n\r\nuntil-close',
    close: true,
    proxy: '200:b\r\nuntil-close\r\n0\r\n\r\n+fresh',
    differs: { haproxy: 'HAProxy sends the body raw and closes the client connection' },
  },
  { path: '/connection-close-kept-open', now: ok('Connection: close\r\n'), proxy: '200:ok+fresh' },
  { path: '/bare-lf', now: 'HTTP/1.1 200 OK\nContent-Length: 2\n\nok', proxy: '200:ok+fresh' },
  {
    path: '/nothing',
    now: '',
    close: true,
    proxy:
      '503:upstream connect error or disconnect/reset before headers. reset reason: connection termination+fresh',
    differs: {
      nginx: 'nginx answers 502; the reference answers a reset before any byte with 503',
      haproxy: 'HAProxy answers 502; the reference answers a reset before any byte with 503',
    },
  },
];

const FRESH = 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfresh';
let origin: net.Server;
let proxy: TestProxy;
let nginx: Nginx | null = null;
let haproxy: Haproxy | null = null;

before(async () => {
  const byPath = new Map(CASES.map((c) => [c.path, c]));
  origin = net.createServer((socket) => {
    let buffered = '';
    socket.on('error', () => {});
    socket.on('data', (d: Buffer) => {
      buffered += d.toString('latin1');
      for (let end = buffered.indexOf('\r\n\r\n'); end >= 0; end = buffered.indexOf('\r\n\r\n')) {
        const path = buffered.slice(0, buffered.indexOf('\r\n')).split(' ')[1] ?? '';
        buffered = buffered.slice(end + 4);
        const c = byPath.get(path);
        if (!c) {
          socket.write(FRESH);
          continue;
        }
        socket.write(c.now);
        if (c.later) setTimeout(() => socket.writable && socket.write(c.later as string), 50);
        if (c.close) socket.end();
      }
    });
  });
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
  const port = (origin.address() as net.AddressInfo).port;
  proxy = await startProxy(hcmConfig('origin'), [
    { raw: { name: 'origin' }, addresses: [`127.0.0.1:${port}`] },
  ]);
  if (hasNginx)
    nginx = await startNginx(
      `location / { proxy_pass http://127.0.0.1:${port}; proxy_http_version 1.1; proxy_set_header Connection ""; }`,
    );
  if (hasHaproxy) haproxy = await startHaproxy(port);
});

after(async () => {
  nginx?.stop();
  haproxy?.stop();
  await proxy.close();
  origin.close();
});

/** The path, then 200 ms later `/fresh` on the same connection: `status:body[+fresh]`. */
function outcome(port: number, path: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let out = '';
    const done = setTimeout(() => socket.destroy(), 1500);
    socket.on('data', (d: Buffer) => {
      out += d.toString('latin1');
      if (out.endsWith('fresh')) socket.destroy();
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(done);
      const [first, ...rest] = out.split(/(?=HTTP\/1\.[01] \d{3})/);
      const status = first?.slice(9, 12) ?? '';
      const body = first === undefined ? '' : first.slice(first.indexOf('\r\n\r\n') + 4);
      resolve(`${status}:${body}${rest.some((r) => r.endsWith('\r\n\r\nfresh')) ? '+fresh' : ''}`);
    });
    socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
    setTimeout(() => {
      if (!socket.destroyed) socket.write('GET /fresh HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    }, 200);
  });
}

test('the proxy answers each hostile upstream as the case says, and its pool never desynchronises', async () => {
  for (const c of CASES) assert.equal(await outcome(proxy.port, c.path), c.proxy, c.path);
});

for (const [peer, skip] of [
  ['nginx', hasNginx ? false : NO_NGINX],
  ['haproxy', hasHaproxy ? false : NO_HAPROXY],
] as const) {
  test(`${peer} answers the same, except where a case names why`, { skip }, async (t) => {
    const port = (peer === 'nginx' ? nginx : haproxy)?.port ?? 0;
    const unexplained: string[] = [];
    for (const c of CASES) {
      const got = await outcome(port, c.path);
      // The peers' own error pages differ from the proxy's text: compare the status there.
      const same = c.proxy.startsWith('5') ? got.slice(0, 3) === c.proxy.slice(0, 3) : got === c.proxy;
      const reason = c.differs?.[peer];
      if (same && reason) t.diagnostic(`${c.path}: ${peer} now agrees with the proxy (${reason})`);
      if (!same && !reason)
        unexplained.push(`${c.path}: proxy ${JSON.stringify(c.proxy)}, ${peer} ${JSON.stringify(got)}`);
    }
    assert.deepEqual(unexplained, []);
  });
}
