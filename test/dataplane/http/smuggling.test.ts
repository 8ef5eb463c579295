/**
 * Hostile HTTP/1 bytes through a real proxy listener to a raw TCP upstream that records
 * exactly what reaches it (issue 11, findings 1 and 7). Root cause of both: heads were split
 * on CRLF only and never checked byte by byte, in either direction.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, test } from 'node:test';
import { hcmConfig, rawExchange, startProxy, type TestProxy } from '../../helpers/http-dataplane.js';

interface RawUpstream {
  port: number;
  /** Every byte each upstream connection received, in connection order. */
  received: string[];
  close(): void;
}

/** A TCP server that answers each connection once, after the first head, with `reply(path)`. */
async function rawUpstream(reply: (path: string) => string): Promise<RawUpstream> {
  const received: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    const index = received.push('') - 1;
    let answered = false;
    socket.on('data', (chunk) => {
      received[index] += chunk.toString('latin1');
      const text = received[index] as string;
      if (answered || !text.includes('\r\n\r\n')) return;
      answered = true;
      socket.end(reply(text.split(' ')[1] ?? ''), 'latin1');
    });
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    received,
    close() {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

const RESPONSES: Record<string, string> = {
  '/status600': 'HTTP/1.1 600 Odd\r\ncontent-length: 0\r\n\r\n',
  '/status999': 'HTTP/1.1 999 Odd\r\ncontent-length: 0\r\n\r\n',
  '/conflicting-length': 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 12\r\n\r\nok',
  '/huge-head': `HTTP/1.1 200 OK\r\nx-big: ${'a'.repeat(81 * 1024)}\r\ncontent-length: 2\r\n\r\nok`,
  '/nul-header': 'HTTP/1.1 200 OK\r\nx-a: a\0b\r\ncontent-length: 2\r\n\r\nok',
  '/bare-cr-header': 'HTTP/1.1 200 OK\r\nx-a: a\rb\r\ncontent-length: 2\r\n\r\nok',
  '/bare-lf-header': 'HTTP/1.1 200 OK\nx-a: a\nx-b: b\ncontent-length: 2\n\nok',
};

const C = 'Connection: close\r\n';

let upstream: RawUpstream;
let proxy: TestProxy;

before(async () => {
  upstream = await rawUpstream(
    (path) => RESPONSES[path] ?? 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok',
  );
  proxy = await startProxy(hcmConfig('backend'), [
    { raw: { name: 'backend', connect_timeout: '1s' }, addresses: [`127.0.0.1:${upstream.port}`] },
  ]);
});

after(async () => {
  await proxy.close();
  upstream.close();
});

/** The head of an upstream connection's bytes, x-request-id blanked (it differs per request). */
function headOf(raw: string): string {
  return raw.slice(0, raw.indexOf('\r\n\r\n') + 4).replace(/x-request-id: [^\r]*/, 'x-request-id: *');
}

test('X-A: a\\nContent-Length: 120 is split at the LF: the proxy frames the body itself and forwards CRLF lines only', async () => {
  const before = upstream.received.length;
  const smuggled = 'GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n';
  await rawExchange(
    proxy.port,
    `GET /first HTTP/1.1\r\nHost: x\r\nX-A: a\nContent-Length: 120\r\n\r\n${smuggled}`,
    500,
  );
  assert.equal(upstream.received.length, before + 1);
  const raw = upstream.received[before] as string;
  const head = headOf(raw);
  assert.match(head, /^GET \/first HTTP\/1.1\r\n/);
  assert.match(head, /\r\nx-a: a\r\n/);
  assert.match(head, /\r\ncontent-length: 120\r\n/);
  assert.doesNotMatch(head, /[^\r]\n|\r[^\n]|\0/);
  // What followed the head is body as both sides count it, never a second request head.
  assert.equal(raw.slice(raw.indexOf('\r\n\r\n') + 4), smuggled);
});

test('a header spoofed behind a bare LF reaches the upstream exactly as the same header sent properly', async () => {
  const start = upstream.received.length;
  const lf = await rawExchange(
    proxy.port,
    'GET /xff HTTP/1.1\r\nHost: x\r\nX-A: a\nX-Forwarded-For: 6.6.6.6\r\nConnection: close\r\n\r\n',
  );
  const crlf = await rawExchange(
    proxy.port,
    'GET /xff HTTP/1.1\r\nHost: x\r\nX-A: a\r\nX-Forwarded-For: 6.6.6.6\r\nConnection: close\r\n\r\n',
  );
  assert.match(lf, /^HTTP\/1.1 200/);
  assert.match(crlf, /^HTTP\/1.1 200/);
  const [a, b] = upstream.received.slice(start).map(headOf);
  assert.match(a as string, /\r\nx-forwarded-for: 6\.6\.6\.6/);
  assert.equal(a, b);
});

test('a request with bare-LF line endings is answered, not left hanging', async () => {
  const started = performance.now();
  const out = await rawExchange(proxy.port, 'GET /lf HTTP/1.1\nHost: x\nConnection: close\n\n', 3000);
  assert.match(out, /^HTTP\/1.1 200 OK\r\n/);
  assert.match(out, /\r\n\r\nok$/);
  assert.ok(performance.now() - started < 2000);
});

test('invalid methods, NUL, CR, controls and 8-bit bytes are refused with 400 and never reach the upstream', async () => {
  const cases = [
    'G@T / HTTP/1.1\r\nHost: x\r\n\r\n',
    'GET /a\0b HTTP/1.1\r\nHost: x\r\n\r\n',
    'GET /a\rb HTTP/1.1\r\nHost: x\r\n\r\n',
    'GET /caf\xe9 HTTP/1.1\r\nHost: x\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n folded\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: x\r\nX A: a\r\n\r\n',
    'GET / HTTP/1.1\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n',
    'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab',
    'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    'POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n',
  ];
  const before = upstream.received.length;
  const errors = proxy.counter('http.ingress.downstream_cx_protocol_error');
  for (const c of cases) {
    const out = await rawExchange(proxy.port, Buffer.from(c, 'latin1'));
    assert.match(out, /^HTTP\/1.1 400 Bad Request\r\n/, JSON.stringify(c));
  }
  assert.equal(upstream.received.length, before);
  assert.equal(proxy.counter('http.ingress.downstream_cx_protocol_error'), errors + cases.length);
  assert.match(
    await rawExchange(proxy.port, 'POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n'),
    /^HTTP\/1.1 501/,
  );
  assert.match(await rawExchange(proxy.port, 'GET / HTTP/2.0\r\nHost: x\r\n\r\n'), /^HTTP\/1.1 505/);
});

test('head limits: 431 for a head over 60 KiB (even before it ends) and for more than 100 headers', async () => {
  const open = `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(61 * 1024)}`;
  assert.match(await rawExchange(proxy.port, open, 3000), /^HTTP\/1.1 431/);
  const many = `GET / HTTP/1.1\r\nHost: x\r\n${'X-N: v\r\n'.repeat(100)}\r\n`;
  assert.match(await rawExchange(proxy.port, many), /^HTTP\/1.1 431/);
  const fine = `GET / HTTP/1.1\r\nHost: x\r\n${'X-N: v\r\n'.repeat(98)}Connection: close\r\n\r\n`;
  assert.match(await rawExchange(proxy.port, fine), /^HTTP\/1.1 200/);
});

test('malformed upstream response heads answer 502: status 600 and 999, conflicting lengths, oversize, NUL, bare CR', async () => {
  const errors = proxy.counter('cluster.backend.upstream_cx_protocol_error');
  const bad = [
    '/status600',
    '/status999',
    '/conflicting-length',
    '/huge-head',
    '/nul-header',
    '/bare-cr-header',
  ];
  for (const path of bad) {
    const out = await rawExchange(proxy.port, `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    assert.match(out, /^HTTP\/1.1 502 Bad Gateway\r\n/, path);
    assert.match(out, /reset reason: protocol error/, path);
    assert.doesNotMatch(out, /x-big|Odd/, path);
  }
  assert.equal(proxy.counter('cluster.backend.upstream_cx_protocol_error'), errors + bad.length);
  assert.equal(proxy.counter('http.ingress.downstream_rq_5xx') >= bad.length, true);
});

test('an upstream head with bare-LF line endings is read like CRLF and forwarded with CRLF', async () => {
  const out = await rawExchange(
    proxy.port,
    'GET /bare-lf-header HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
  );
  assert.match(out, /^HTTP\/1.1 200 OK\r\n/);
  assert.match(out, /\r\nx-a: a\r\nx-b: b\r\n/);
  assert.match(out, /\r\n\r\nok$/);
});

test('the HCM limits max_request_headers_kb and common_http_protocol_options.max_headers_count are the ones enforced', async () => {
  const small = await startProxy(
    {
      ...hcmConfig('backend'),
      max_request_headers_kb: 2,
      common_http_protocol_options: { max_headers_count: 5 },
    },
    [{ raw: { name: 'backend', connect_timeout: '1s' }, addresses: [`127.0.0.1:${upstream.port}`] }],
  );
  try {
    const four = 'X-N: v\r\n'.repeat(3);
    assert.match(
      await rawExchange(small.port, `GET / HTTP/1.1\r\nHost: x\r\n${four}${C}\r\n`),
      /^HTTP\/1.1 200/,
    );
    assert.match(
      await rawExchange(small.port, `GET / HTTP/1.1\r\nHost: x\r\n${four}X-N: v\r\n${C}\r\n`),
      /^HTTP\/1.1 431/,
    );
    const big = `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(2048)}\r\n${C}\r\n`;
    assert.match(await rawExchange(small.port, big), /^HTTP\/1.1 431/);
    assert.equal(small.counter('http.ingress.downstream_rq_too_large'), 2);
  } finally {
    await small.close();
  }
});
