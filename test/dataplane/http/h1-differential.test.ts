/**
 * HTTP/1 differential test (issue 25): the same raw request bytes go through the proxy, nginx
 * and HAProxy to one recording HTTP/1.1 origin, and what reaches the origin (each request's
 * method, target, Host and body) is compared. Every case where a peer delivers otherwise on
 * purpose names its reason.
 *
 * Root causes of the findings this harness turned up, each a case below:
 * - a malformed chunk after a request head (an overlong or `0x` size, data without its CRLF)
 *   reset the client's connection without a word: the codec dropped the exchange instead of
 *   answering 400 as the reference, nginx and HAProxy do;
 * - an absolute-form target's authority became the Host unchecked, so
 *   `GET http://user:pass@host/` sent `host: user:pass@host` upstream (RFC 9110 4.2.4: refuse);
 *   and `GET http://host?q` became a path without its `/`, answered 404;
 * - a `#fragment` in the target reached routes and origin (`/admin#x` passes a route denying
 *   `/admin`; the reference's CVE-2021-32779 fix refuses it with 400);
 * - `Upgrade: h2c` (what `curl --http2` sends on http://) and an `Upgrade` without
 *   `Connection: upgrade` were refused 403 as failed upgrades; the reference, nginx and HAProxy
 *   serve them as plain HTTP/1.1 requests;
 * - the chunk framer trimmed every line's trailing whitespace: a line of spaces in the trailers
 *   ended the body, so the request written after it reached the origin as a second request
 *   (nginx reads that line as a trailer field and the request as trailers too; the reference and
 *   HAProxy refuse it); spaces after chunk data, a space before the size and a bare CR in an
 *   extension or a trailer passed too, which all three refuse.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type DifferentialCase, frontsOfOneOrigin, peersDeliverTheSame } from '../../helpers/differential.js';
import { startHaproxy } from '../../helpers/haproxy.js';
import { rawExchange } from '../../helpers/http-dataplane.js';

/** What reached the origin: nothing, or each request as `METHOD target host=... body=...`. */
type Arrival = 'refused' | string[];

interface Case extends DifferentialCase<Arrival> {
  bytes: string;
  /** The proxy's status when it refuses (checked only for the proxy). */
  status?: number;
}

const H = 'Host: x\r\n';
const C = 'Connection: close\r\n';
const chunked = (body: string) => `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n${C}\r\n${body}`;
const post = (body: string) => [`POST / host=x body=${body}`];
/** A chunked POST on a kept-alive connection, and a request after it. */
const chunkedThen = (body: string) =>
  `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n${body}GET /next HTTP/1.1\r\n${H}${C}\r\n`;
const NGINX_TRAILER =
  'nginx reads any line up to the empty one as a trailer field; the reference and HAProxy refuse it';

const HAPROXY_AUTHORITY =
  'HAProxy 2.6 refuses an absolute-form target whose authority differs from Host; RFC 9112 3.2.2 has the authority replace Host, as the reference and nginx do';
const HAPROXY_FORWARDS = 'HAProxy forwards the method to the origin; the reference answers it itself';
const PEERS_KEEP_CTL =
  'nginx and HAProxy keep control bytes in values; RFC 9110 5.5 calls them invalid and the reference refuses them';
const HTTP10 = 'nginx and HAProxy serve HTTP/1.0; the reference answers it 426 unless accept_http_10';

const CASES: Case[] = [
  { name: 'plain GET', bytes: `GET /a HTTP/1.1\r\n${H}${C}\r\n`, proxy: ['GET /a host=x body='] },
  {
    name: 'chunk size with leading zeros',
    bytes: chunked('0005\r\nhello\r\n0\r\n\r\n'),
    proxy: post('hello'),
  },
  { name: 'chunk extension', bytes: chunked('5;a=b\r\nhello\r\n0\r\n\r\n'), proxy: post('hello') },
  { name: 'chunk lines ended by bare LF', bytes: chunked('5\nhello\n0\n\n'), proxy: post('hello') },
  {
    name: 'Content-Length in the trailers',
    bytes: chunked('5\r\nhello\r\n0\r\nContent-Length: 50\r\n\r\n'),
    proxy: post('hello'),
  },
  {
    name: 'chunk size overflow',
    bytes: chunked('FFFFFFFFFFFFFFFFF5\r\nhello\r\n0\r\n\r\n'),
    proxy: 'refused',
    status: 400,
  },
  { name: 'chunk size 0x5', bytes: chunked('0x5\r\nhello\r\n0\r\n\r\n'), proxy: 'refused', status: 400 },
  {
    name: 'a line of spaces in the trailers, then a request',
    bytes: chunkedThen(`5\r\nhello\r\n0\r\n   \r\nGET /smuggled HTTP/1.1\r\n${H}\r\n`),
    proxy: 'refused',
    status: 400,
    differs: { nginx: NGINX_TRAILER },
  },
  {
    name: 'a trailer line without a colon',
    bytes: chunkedThen('5\r\nhello\r\n0\r\nGET /smuggled HTTP/1.1\r\n\r\n'),
    proxy: 'refused',
    status: 400,
    differs: { nginx: NGINX_TRAILER },
  },
  {
    name: 'a bare CR in a trailer',
    bytes: chunkedThen('5\r\nhello\r\n0\r\nX: a\rb\r\n\r\n'),
    proxy: 'refused',
  },
  { name: 'spaces after chunk data', bytes: chunkedThen('5\r\nhello  \r\n0\r\n\r\n'), proxy: 'refused' },
  { name: 'a space before the chunk size', bytes: chunkedThen(' 5\r\nhello\r\n0\r\n\r\n'), proxy: 'refused' },
  {
    name: 'a bare CR in a chunk extension',
    bytes: chunkedThen('5;a\rb\r\nhello\r\n0\r\n\r\n'),
    proxy: 'refused',
  },
  {
    name: 'a space before a chunk extension, a last chunk with one, then a request',
    bytes: chunkedThen('5 ;a=b\r\nhello\r\n0;x=y\r\n\r\n'),
    proxy: ['POST / host=x body=hello', 'GET /next host=x body='],
  },
  {
    name: 'chunk data without its CRLF',
    bytes: chunked('5\r\nhelloX0\r\n\r\n'),
    proxy: 'refused',
    status: 400,
  },
  {
    name: 'Transfer-Encoding: chunked, identity',
    bytes: `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked, identity\r\n${C}\r\n5\r\nhello\r\n0\r\n\r\n`,
    proxy: 'refused',
  },
  {
    name: 'Transfer-Encoding and Content-Length',
    bytes: `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\nContent-Length: 5\r\n${C}\r\n0\r\n\r\n`,
    proxy: 'refused',
    differs: {
      haproxy:
        'HAProxy drops the Content-Length and frames by Transfer-Encoding (RFC 9112 6.3 allows it); the reference and nginx refuse',
    },
  },
  {
    name: 'Content-Length list of equal values',
    bytes: `POST / HTTP/1.1\r\n${H}Content-Length: 5, 5\r\n${C}\r\nhello`,
    proxy: 'refused',
    differs: {
      haproxy:
        'HAProxy folds a list of equal lengths (RFC 9110 8.6 allows it); the reference and nginx refuse',
    },
  },
  {
    name: 'Content-Length with leading zeros',
    bytes: `POST / HTTP/1.1\r\n${H}Content-Length: 005\r\n${C}\r\nhello`,
    proxy: post('hello'),
  },
  {
    name: 'a complete request after a body (pipelining, not smuggling)',
    bytes: `POST / HTTP/1.1\r\n${H}Content-Length: 4\r\n\r\nabcdGET /next HTTP/1.1\r\n${H}${C}\r\n`,
    proxy: ['POST / host=x body=abcd', 'GET /next host=x body='],
  },
  {
    name: 'absolute-form target',
    bytes: `GET http://other/a HTTP/1.1\r\n${H}${C}\r\n`,
    proxy: ['GET /a host=other body='],
    differs: { haproxy: HAPROXY_AUTHORITY },
  },
  {
    name: 'absolute-form target with a query and no path',
    bytes: `GET http://other?q=1 HTTP/1.1\r\n${H}${C}\r\n`,
    proxy: ['GET /?q=1 host=other body='],
    differs: { haproxy: HAPROXY_AUTHORITY },
  },
  {
    name: 'absolute-form target with userinfo',
    bytes: `GET http://u:p@other/a HTTP/1.1\r\n${H}${C}\r\n`,
    proxy: 'refused',
    status: 400,
  },
  {
    name: 'fragment in the target',
    bytes: `GET /admin#x HTTP/1.1\r\n${H}${C}\r\n`,
    proxy: 'refused',
    status: 400,
    differs: {
      nginx:
        'nginx forwards the fragment; RFC 9112 3.2 has none, and the reference refuses it (CVE-2021-32779)',
    },
  },
  {
    name: 'Upgrade: h2c',
    bytes: `GET / HTTP/1.1\r\n${H}Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n${C}\r\n`,
    proxy: ['GET / host=x body='],
  },
  {
    name: 'Upgrade without Connection: upgrade',
    bytes: `GET / HTTP/1.1\r\n${H}Upgrade: websocket\r\n${C}\r\n`,
    proxy: ['GET / host=x body='],
  },
  {
    name: 'an upgrade no route enables',
    bytes: `GET / HTTP/1.1\r\n${H}Connection: Upgrade\r\nUpgrade: websocket\r\n${C}\r\n`,
    proxy: 'refused',
    status: 403,
    differs: {
      nginx:
        'nginx forwards it without the upgrade; the reference refuses an upgrade its upgrade_configs do not name',
    },
  },
  {
    name: 'OPTIONS *',
    bytes: `OPTIONS * HTTP/1.1\r\n${H}${C}\r\n`,
    proxy: 'refused',
    status: 404,
    differs: { haproxy: HAPROXY_FORWARDS },
  },
  {
    name: 'CONNECT',
    bytes: `CONNECT other:443 HTTP/1.1\r\nHost: other:443\r\n${C}\r\n`,
    proxy: 'refused',
    status: 403,
    differs: { haproxy: HAPROXY_FORWARDS },
  },
  {
    name: 'Host with userinfo',
    bytes: `GET / HTTP/1.1\r\nHost: u@x\r\n${C}\r\n`,
    proxy: 'refused',
    differs: {
      nginx: 'nginx takes any Host characters; RFC 9110 7.2 has uri-host only',
      haproxy: 'HAProxy takes any Host characters; RFC 9110 7.2 has uri-host only',
    },
  },
  {
    name: 'vertical tab in a value',
    bytes: `GET / HTTP/1.1\r\n${H}X-A: a\x0bb\r\n${C}\r\n`,
    proxy: 'refused',
    differs: { nginx: PEERS_KEEP_CTL, haproxy: PEERS_KEEP_CTL },
  },
  {
    name: 'HTTP/1.0',
    bytes: `GET / HTTP/1.0\r\n${H}\r\n`,
    proxy: 'refused',
    status: 426,
    differs: { nginx: HTTP10, haproxy: HTTP10 },
  },
];

const fronts = frontsOfOneOrigin({
  nginxDirectives: 'proxy_set_header Host $host; proxy_http_version 1.1;',
  startHaproxy,
});

/** Sends one case on a fresh connection to `port`: the front's status and what reached the origin. */
async function arrival(port: number, c: Case): Promise<{ status: number; arrival: Arrival }> {
  const origin = fronts.origin;
  origin.reset();
  const out = await rawExchange(port, Buffer.from(c.bytes, 'latin1'), 2000);
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(out)?.[1] ?? 0);
  if (origin.requests.length === 0) return { status, arrival: 'refused' };
  return {
    status,
    arrival: origin.requests.map((r) => {
      const [method, target] = (r.lines[0] as string).split(' ');
      const host = r.lines
        .find((l) => /^host:/i.test(l))
        ?.slice(5)
        .trim();
      return `${method} ${target} host=${host} body=${r.body}`;
    }),
  };
}

test('the proxy delivers what each case says, and answers a refusal itself', async () => {
  for (const c of CASES) {
    const got = await arrival(fronts.proxy.port, c);
    assert.deepEqual(got.arrival, c.proxy, c.name);
    if (c.proxy === 'refused') {
      assert.ok(got.status >= 400, `${c.name}: answered ${got.status || 'nothing'}`);
      if (c.status) assert.equal(got.status, c.status, c.name);
    }
  }
});

peersDeliverTheSame(CASES, fronts, async (port, c) => (await arrival(port, c)).arrival);
