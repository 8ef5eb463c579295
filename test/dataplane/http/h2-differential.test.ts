/**
 * HTTP/2 differential test (issue 25): the same raw HTTP/2 requests go through the proxy,
 * nginx and HAProxy (each h2c with prior knowledge) to one recording HTTP/1.1 origin; which
 * requests reach it, with how many Content-Length fields and which Host, is compared. Every
 * case where a peer answers otherwise on purpose names its reason.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type DifferentialCase, frontsOfOneOrigin, peersDeliverTheSame } from '../../helpers/differential.js';
import { FLAG, FRAME, frame, headersFrame, rawH2 } from '../../helpers/h2-frames.js';
import { startH2cHaproxy } from '../../helpers/haproxy.js';

/** What reached the origin: nothing, or the request's Content-Length count, Host, body and any Cookie lines. */
type Arrival =
  | 'refused'
  | { contentLengths: number; chunked: boolean; host: string; body: string; cookies?: string[] };

interface Case extends DifferentialCase<Arrival> {
  fields: Array<[string, string]>;
  /** DATA frames after the HEADERS (the last one ends the stream); none: HEADERS ends it. */
  data: string[];
}

const POST: Array<[string, string]> = [
  [':method', 'POST'],
  [':scheme', 'http'],
  [':path', '/d'],
  [':authority', 'a.test'],
];
const GET: Array<[string, string]> = [[':method', 'GET'], ...POST.slice(1)];

const NGINX_CONNECTION_SPECIFIC =
  'nginx drops connection-specific fields and forwards the request; RFC 9113 8.2.2 makes it malformed, and nghttp2 resets it';

const CONTROL_PASSED_ON = (peer: string) =>
  `${peer} passes a control byte other than NUL, CR and LF in a value (RFC 9113 8.2.1 forbids only those); nghttp2 and oghttp2 refuse every one but HTAB, as the proxy's HTTP/1 parser does`;

/** Pseudo-header values nginx and HAProxy pass on, and why the proxy refuses them. */
const PASSED_ON: Record<string, Case['differs']> = {
  '/d\xff': {
    nginx:
      'nginx passes an 8-bit byte in :path; oghttp2 and the proxy hold it to an HTTP/1 target (visible ASCII)',
    haproxy:
      'HAProxy passes an 8-bit byte in :path; oghttp2 and the proxy hold it to an HTTP/1 target (visible ASCII)',
  },
  'user@a.test': {
    nginx: 'nginx passes userinfo in :authority as the Host; RFC 9113 8.3.1 forbids it and oghttp2 resets it',
    haproxy:
      'HAProxy passes userinfo in :authority as the Host; RFC 9113 8.3.1 forbids it and oghttp2 resets it',
  },
};

const CASES: Case[] = [
  {
    name: 'POST with content-length',
    fields: [...POST, ['content-length', '5']],
    data: ['hello'],
    proxy: { contentLengths: 1, chunked: false, host: 'a.test', body: 'hello' },
  },
  {
    name: 'POST without content-length',
    fields: POST,
    data: ['hel', 'lo'],
    proxy: { contentLengths: 0, chunked: true, host: 'a.test', body: 'hello' },
    differs: { nginx: 'nginx reads the whole body first and sends it with a Content-Length' },
  },
  {
    name: 'host equal to :authority',
    fields: [...GET, ['host', 'a.test']],
    data: [],
    proxy: { contentLengths: 0, chunked: false, host: 'a.test', body: '' },
    differs: {
      nginx:
        'nginx 1.22 refuses a host field beside :authority even when equal (duplicate host); RFC 9113 8.3.1 only calls a differing one malformed',
    },
  },
  {
    name: 'host differing from :authority',
    fields: [...GET, ['host', 'evil.test']],
    data: [],
    proxy: 'refused',
    differs: { haproxy: 'HAProxy sends :authority as Host and drops the host field' },
  },
  {
    name: 'DATA short of content-length',
    fields: [...POST, ['content-length', '10']],
    data: ['short'],
    proxy: 'refused',
  },
  {
    name: 'DATA beyond content-length',
    fields: [...POST, ['content-length', '2']],
    data: ['too long'],
    proxy: 'refused',
  },
  { name: 'uppercase field name', fields: [...GET, ['X-Upper', 'v']], data: [], proxy: 'refused' },
  {
    name: 'connection field',
    fields: [...GET, ['connection', 'close']],
    data: [],
    proxy: 'refused',
    differs: { nginx: NGINX_CONNECTION_SPECIFIC },
  },
  {
    name: 'transfer-encoding field',
    fields: [...POST, ['transfer-encoding', 'chunked']],
    data: ['x'],
    proxy: 'refused',
    differs: { nginx: NGINX_CONNECTION_SPECIFIC },
  },
  { name: 'CR in a value', fields: [...GET, ['x-a', 'a\rb']], data: [], proxy: 'refused' },
  { name: 'LF in a value', fields: [...GET, ['x-a', 'a\nb']], data: [], proxy: 'refused' },
  { name: 'NUL in a value', fields: [...GET, ['x-a', 'a\0b']], data: [], proxy: 'refused' },
  // Other control bytes: an ANSI escape sequence would reach the origin and every text log.
  ...(['\x1b[31m', '\x01', '\x7f', '\x0b'] as const).map(
    (ctl): Case => ({
      name: `control byte ${JSON.stringify(ctl)} in a value`,
      fields: [...GET, ['x-a', `a${ctl}b`]],
      data: [],
      proxy: 'refused',
      differs: { nginx: CONTROL_PASSED_ON('nginx'), haproxy: CONTROL_PASSED_ON('HAProxy') },
    }),
  ),
  { name: 'space in a name', fields: [...GET, ['x a', 'v']], data: [], proxy: 'refused' },
  { name: 'colon in a name', fields: [...GET, ['x:a', 'v']], data: [], proxy: 'refused' },
  { name: 'empty name', fields: [...GET, ['', 'v']], data: [], proxy: 'refused' },
  // Pseudo-header fields go into the HTTP/1 request line and Host as they are (issue 25's
  // second round): a byte outside their syntax would forge another request line or Host.
  ...(
    [
      [':method', 'GET /admin'],
      [':method', 'GET\t/admin'],
      [':path', '/d /admin'],
      [':path', '/d\t/admin'],
      [':path', '/d\x01'],
      [':path', '/d\xff'],
      [':path', 'd'],
      [':authority', 'a.test /admin'],
      [':authority', 'user@a.test'],
      [':scheme', 'ht tp'],
    ] as const
  ).map(
    ([pseudo, value]): Case => ({
      name: `${pseudo} ${JSON.stringify(value)}`,
      fields: GET.map(([n, v]) => [n, n === pseudo ? value : v]),
      data: [],
      proxy: 'refused',
      differs: PASSED_ON[value],
    }),
  ),
  {
    name: 'no :authority nor host',
    fields: GET.filter(([n]) => n !== ':authority'),
    data: [],
    proxy: 'refused',
    differs: {
      haproxy:
        'HAProxy sends an empty Host; oghttp2 (the reference codec) resets a request without :authority or host',
    },
  },
  {
    name: 'cookie in two fields',
    fields: [...GET, ['cookie', 'a=1'], ['cookie', 'b=2']],
    data: [],
    proxy: { contentLengths: 0, chunked: false, host: 'a.test', body: '', cookies: ['cookie: a=1; b=2'] },
  },
];

const fronts = frontsOfOneOrigin({
  nginxDirectives: 'proxy_set_header Host $host;',
  listenFlags: 'http2',
  startHaproxy: startH2cHaproxy,
});

/** Sends one case on a fresh connection to `port` and reads what reached the origin. */
async function arrival(port: number, c: Case): Promise<Arrival> {
  const origin = fronts.origin;
  origin.reset();
  const h2 = await rawH2(port);
  h2.send(headersFrame(1, c.fields, c.data.length === 0));
  for (const [i, d] of c.data.entries())
    h2.send(frame(FRAME.DATA, i === c.data.length - 1 ? FLAG.END_STREAM : 0, 1, Buffer.from(d)));
  await h2.until(
    (frames) =>
      frames.some(
        (f) =>
          (f.streamId === 1 && (f.type === FRAME.HEADERS || f.type === FRAME.RST_STREAM)) ||
          f.type === FRAME.GOAWAY,
      ),
    5000,
  );
  h2.socket.destroy();
  const req = origin.requests[0];
  if (!req) return 'refused';
  const field = (name: string) => req.lines.slice(1).filter((l) => l.toLowerCase().startsWith(`${name}:`));
  const cookies = field('cookie');
  return {
    contentLengths: field('content-length').length,
    chunked: req.chunked,
    host: (field('host')[0] ?? '').slice(5).trim(),
    body: req.body,
    ...(cookies.length > 0 ? { cookies: cookies.map((l) => l.toLowerCase()) } : {}),
  };
}

test('the proxy delivers what each case says', async () => {
  for (const c of CASES) assert.deepEqual(await arrival(fronts.proxy.port, c), c.proxy, c.name);
});

// A loaded machine sometimes makes the peer itself refuse (HAProxy answered a plain GET
// "refused" once in a full run): a difference counts only if it is there twice.
peersDeliverTheSame(CASES, fronts, arrival, true);
