/**
 * Differential test: the same request bytes go to the proxy and to nginx (Debian's package,
 * run as a reverse proxy in a temporary prefix), both in front of one recording upstream,
 * and their accept/reject answers are compared. Every case where they differ on purpose
 * names its reason; docs/reliability.md ("HTTP/1 parsing rules") lists them.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { test } from 'node:test';
import { hcmConfig, rawExchange, startProxy } from '../../helpers/http-dataplane.js';
import { hasNginx, NO_NGINX, type Nginx, startNginx } from '../../helpers/nginx.js';

type Verdict = 'accept' | 'reject';

interface Case {
  name: string;
  bytes: string;
  proxy: Verdict;
  /** Why nginx answers the other way, when it does. */
  nginxDiffers?: string;
}

const H = 'Host: x\r\n';
const C = 'Connection: close\r\n';
const get = (extra: string) => `GET / HTTP/1.1\r\n${H}${extra}${C}\r\n`;

const NGINX_CTL =
  'nginx keeps control bytes other than NUL, CR and LF in values; RFC 9110 5.5 calls them invalid and the proxy refuses them';
const NGINX_SPACES =
  'nginx splits the request line on runs of spaces; RFC 9112 3 has exactly one SP between parts and the proxy refuses others';
const NGINX_IGNORES_BAD_NAMES =
  'nginx drops fields with invalid names (ignore_invalid_headers); RFC 9112 5.1 and the reference refuse';

const CASES: Case[] = [
  { name: 'valid GET', bytes: get(''), proxy: 'accept' },
  { name: 'valid POST', bytes: `POST / HTTP/1.1\r\n${H}Content-Length: 5\r\n${C}\r\nhello`, proxy: 'accept' },
  {
    name: 'valid chunked POST',
    bytes: `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n${C}\r\n5\r\nhello\r\n0\r\n\r\n`,
    proxy: 'accept',
  },
  { name: 'bare LF line endings', bytes: 'GET / HTTP/1.1\nHost: x\nConnection: close\n\n', proxy: 'accept' },
  {
    name: 'LF inside a line (X-A: a\\nContent-Length: 5)',
    bytes: `POST / HTTP/1.1\r\n${H}X-A: a\nContent-Length: 5\r\n${C}\r\nhello`,
    proxy: 'accept',
  },
  { name: 'leading empty line', bytes: `\r\n${get('')}`, proxy: 'accept' },
  { name: 'absolute-form target', bytes: `GET http://x/a HTTP/1.1\r\n${H}${C}\r\n`, proxy: 'accept' },
  {
    name: 'HTTP/1.0 without Host',
    bytes: 'GET / HTTP/1.0\r\n\r\n',
    proxy: 'reject',
    nginxDiffers:
      'nginx serves HTTP/1.0; the reference answers it 426 unless http_protocol_options.accept_http_10 (test/dataplane/http/http1-options.test.ts)',
  },
  { name: 'obs-text in a value', bytes: get('X-A: caf\xe9\r\n'), proxy: 'accept' },
  { name: 'OWS around a value', bytes: get('X-A: \t a \t\r\n'), proxy: 'accept' },
  {
    name: 'lowercase method',
    bytes: `get / HTTP/1.1\r\n${H}${C}\r\n`,
    proxy: 'accept',
    nginxDiffers:
      'nginx takes only upper-case letters, _ and - in methods; RFC 9110 9.1 allows any token, left to the upstream',
  },
  { name: 'extension method', bytes: `PROPFIND / HTTP/1.1\r\n${H}${C}\r\n`, proxy: 'accept' },
  {
    name: 'chunked with OWS',
    bytes: `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked \r\n${C}\r\n0\r\n\r\n`,
    proxy: 'accept',
  },
  { name: 'bare CR in a value', bytes: get('X-A: a\rb\r\n'), proxy: 'reject' },
  { name: 'bare CR as line end', bytes: `GET / HTTP/1.1\r${H}${C}\r\n`, proxy: 'reject' },
  { name: 'NUL in target', bytes: `GET /a\0 HTTP/1.1\r\n${H}${C}\r\n`, proxy: 'reject' },
  { name: 'NUL in a value', bytes: get('X-A: a\0b\r\n'), proxy: 'reject' },
  { name: 'NUL in a name', bytes: get('X-\0A: b\r\n'), proxy: 'reject' },
  { name: 'CR in target', bytes: `GET /a\rb HTTP/1.1\r\n${H}${C}\r\n`, proxy: 'reject' },
  {
    name: '8-bit byte in target',
    bytes: `GET /caf\xe9 HTTP/1.1\r\n${H}${C}\r\n`,
    proxy: 'reject',
    nginxDiffers: 'nginx passes 8-bit bytes in the target; RFC 3986 has none, so the proxy refuses them',
  },
  { name: 'control byte in target', bytes: `GET /a\x01 HTTP/1.1\r\n${H}${C}\r\n`, proxy: 'reject' },
  { name: 'DEL in target', bytes: `GET /a\x7f HTTP/1.1\r\n${H}${C}\r\n`, proxy: 'reject' },
  {
    name: 'control byte in a value',
    bytes: get('X-A: a\x01b\r\n'),
    proxy: 'reject',
    nginxDiffers: NGINX_CTL,
  },
  { name: 'DEL in a value', bytes: get('X-A: a\x7fb\r\n'), proxy: 'reject', nginxDiffers: NGINX_CTL },
  { name: 'method not a token', bytes: `G@T / HTTP/1.1\r\n${H}${C}\r\n`, proxy: 'reject' },
  { name: 'obs-fold', bytes: get('X-A: a\r\n folded\r\n'), proxy: 'reject' },
  { name: 'space before colon', bytes: get('X-A : b\r\n'), proxy: 'reject' },
  {
    name: 'invalid name character',
    bytes: get('X@A: b\r\n'),
    proxy: 'reject',
    nginxDiffers: NGINX_IGNORES_BAD_NAMES,
  },
  {
    name: 'line without colon',
    bytes: get('X-A\r\n'),
    proxy: 'reject',
    nginxDiffers: NGINX_IGNORES_BAD_NAMES,
  },
  { name: 'empty name', bytes: get(': b\r\n'), proxy: 'reject' },
  { name: 'HTTP/1.1 without Host', bytes: `GET / HTTP/1.1\r\n${C}\r\n`, proxy: 'reject' },
  { name: 'two Host fields', bytes: get('Host: y\r\n'), proxy: 'reject' },
  { name: 'Host with a slash', bytes: `GET / HTTP/1.1\r\nHost: a/b\r\n${C}\r\n`, proxy: 'reject' },
  { name: 'HTTP/2.0 on HTTP/1', bytes: `GET / HTTP/2.0\r\n${H}${C}\r\n`, proxy: 'reject' },
  { name: 'malformed version', bytes: `GET / HTTP/1.x\r\n${H}${C}\r\n`, proxy: 'reject' },
  { name: 'lowercase version', bytes: `GET / http/1.1\r\n${H}${C}\r\n`, proxy: 'reject' },
  {
    name: 'two spaces after the method',
    bytes: `GET  / HTTP/1.1\r\n${H}${C}\r\n`,
    proxy: 'reject',
    nginxDiffers: NGINX_SPACES,
  },
  {
    name: 'trailing space after the version',
    bytes: `GET / HTTP/1.1 \r\n${H}${C}\r\n`,
    proxy: 'reject',
    nginxDiffers: NGINX_SPACES,
  },
  {
    name: 'Content-Length with Transfer-Encoding',
    bytes: `POST / HTTP/1.1\r\n${H}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n${C}\r\n0\r\n\r\n`,
    proxy: 'reject',
  },
  {
    name: 'two equal Content-Lengths',
    bytes: `POST / HTTP/1.1\r\n${H}Content-Length: 5\r\nContent-Length: 5\r\n${C}\r\nhello`,
    proxy: 'reject',
  },
  {
    name: 'conflicting Content-Lengths',
    bytes: `POST / HTTP/1.1\r\n${H}Content-Length: 5\r\nContent-Length: 6\r\n${C}\r\nhello!`,
    proxy: 'reject',
  },
  {
    name: 'signed Content-Length',
    bytes: `POST / HTTP/1.1\r\n${H}Content-Length: +5\r\n${C}\r\nhello`,
    proxy: 'reject',
  },
  {
    name: 'Content-Length list',
    bytes: `POST / HTTP/1.1\r\n${H}Content-Length: 5, 5\r\n${C}\r\nhello`,
    proxy: 'reject',
  },
  {
    name: 'Content-Length overflow',
    bytes: `POST / HTTP/1.1\r\n${H}Content-Length: 99999999999999999999\r\n${C}\r\nhello`,
    proxy: 'reject',
  },
  {
    name: 'gzip, chunked',
    bytes: `POST / HTTP/1.1\r\n${H}Transfer-Encoding: gzip, chunked\r\n${C}\r\n0\r\n\r\n`,
    proxy: 'reject',
  },
  {
    name: 'chunked not final',
    bytes: `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked, gzip\r\n${C}\r\n0\r\n\r\n`,
    proxy: 'reject',
  },
  {
    name: 'identity coding',
    bytes: `POST / HTTP/1.1\r\n${H}Transfer-Encoding: identity\r\n${C}\r\nhello`,
    proxy: 'reject',
  },
  {
    name: 'Transfer-Encoding in HTTP/1.0',
    bytes: 'POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    proxy: 'reject',
  },
  {
    name: 'two Transfer-Encoding fields',
    bytes: `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n${C}\r\n0\r\n\r\n`,
    proxy: 'reject',
  },
  { name: 'head over 60 KiB', bytes: get(`X-Big: ${'a'.repeat(61 * 1024)}\r\n`), proxy: 'reject' },
];

/** accept when the upstream's 200 came back, reject on a status the front answered itself. */
function verdict(out: string): Verdict | string {
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(out)?.[1];
  if (status === '200') return 'accept';
  if (status && status >= '400') return 'reject';
  return `no answer (${JSON.stringify(out.slice(0, 40))})`;
}

test('the proxy and nginx accept and refuse the same malformed requests, except the documented differences', {
  skip: hasNginx ? false : NO_NGINX,
}, async (t) => {
  const upstream = net.createServer((socket) => {
    let seen = '';
    socket.on('data', (c) => {
      seen += c.toString('latin1');
      if (seen.includes('\r\n\r\n'))
        socket.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok');
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const upstreamPort = (upstream.address() as net.AddressInfo).port;
  const proxy = await startProxy(hcmConfig('backend'), [
    { raw: { name: 'backend', connect_timeout: '1s' }, addresses: [`127.0.0.1:${upstreamPort}`] },
  ]);
  let nginx: Nginx | null = null;
  try {
    nginx = await startNginx(`location / { proxy_pass http://127.0.0.1:${upstreamPort}; }`);
    const nginxPort = nginx.port;
    const mismatches: string[] = [];
    let differences = 0;
    for (const c of CASES) {
      const bytes = Buffer.from(c.bytes, 'latin1');
      const ours = verdict(await rawExchange(proxy.port, bytes, 2000));
      const theirs = verdict(await rawExchange(nginxPort, bytes, 2000));
      const nginxExpected = c.nginxDiffers ? (c.proxy === 'accept' ? 'reject' : 'accept') : c.proxy;
      if (ours !== c.proxy) mismatches.push(`${c.name}: proxy ${ours}, expected ${c.proxy}`);
      if (theirs !== nginxExpected) mismatches.push(`${c.name}: nginx ${theirs}, expected ${nginxExpected}`);
      if (c.nginxDiffers) differences += 1;
    }
    t.diagnostic(`${CASES.length} cases, ${differences} documented differences from nginx`);
    assert.deepEqual(mismatches, []);
  } finally {
    nginx?.stop();
    await proxy.close();
    upstream.close();
  }
});
