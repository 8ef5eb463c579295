import assert from 'node:assert/strict';
import { test } from 'node:test';
import { requestFields, trailerProblem } from '../../../../src/dataplane/codec/h2/fields.js';

const GET = [':method', 'GET', ':scheme', 'https', ':path', '/p?q', ':authority', 'A.test'];

test('a well-formed request splits into its pseudo-header fields and the rest, without host and content-length', () => {
  assert.deepEqual(
    requestFields([...GET, 'accept', '*/*', 'host', 'a.test', 'content-length', '12', 'te', 'trailers']),
    {
      method: 'GET',
      path: '/p?q',
      scheme: 'https',
      authority: 'A.test',
      host: 'a.test',
      headers: ['accept', '*/*', 'te', 'trailers'],
      contentLength: 12,
    },
  );
  const connect = requestFields([':method', 'CONNECT', ':authority', 'a.test:443']);
  assert.equal(typeof connect === 'object' && connect.method, 'CONNECT');
});

test('each malformed request names why (RFC 9113 8.1.1, 8.2, 8.3)', () => {
  const cases: Array<[string, string[]]> = [
    ['CR in a value', [...GET, 'x-a', 'a\rb']],
    ['LF in a value', [...GET, 'x-a', 'a\nb']],
    ['NUL in a value', [...GET, 'x-a', 'a\0b']],
    ['NUL in a pseudo-header value', [':method', 'G\0T', ':scheme', 'http', ':path', '/']],
    ['uppercase name', [...GET, 'X-A', 'v']],
    ['space in a name', [...GET, 'x a', 'v']],
    ['colon in a name', [...GET, 'x:a', 'v']],
    ['empty name', [...GET, '', 'v']],
    ['a name beyond ASCII', [...GET, 'x\u00e9', 'v']],
    ['connection-specific', [...GET, 'connection', 'close']],
    ['keep-alive', [...GET, 'keep-alive', '5']],
    ['transfer-encoding', [...GET, 'transfer-encoding', 'chunked']],
    ['upgrade', [...GET, 'upgrade', 'h2c']],
    ['te other than trailers', [...GET, 'te', 'gzip']],
    ['pseudo after regular', [':method', 'GET', ':scheme', 'http', 'x-a', 'v', ':path', '/']],
    ['unknown pseudo', [...GET, ':protocol', 'websocket']],
    ['response pseudo', [...GET, ':status', '200']],
    ['repeated pseudo', [...GET, ':path', '/again']],
    ['no :method', [':scheme', 'http', ':path', '/']],
    ['no :path', [':method', 'GET', ':scheme', 'http']],
    ['empty :path', [':method', 'GET', ':scheme', 'http', ':path', '']],
    ['CONNECT with a path', [':method', 'CONNECT', ':authority', 'a', ':path', '/']],
    ['content-length not a number', [...GET, 'content-length', '1x']],
    ['content-length negative', [...GET, 'content-length', '-1']],
    ['content-lengths that differ', [...GET, 'content-length', '1', 'content-length', '2']],
    ['two hosts', [...GET, 'host', 'a', 'host', 'b']],
    // Root cause of these: pseudo-header values were checked for NUL, CR and LF only, and the
    // HTTP/1 pool writes :method, :path and :authority into its request line and Host as they are.
    ['a space in :method', [':method', 'GET /admin', ':scheme', 'http', ':path', '/', ':authority', 'a']],
    ['an empty :method', [':method', '', ':scheme', 'http', ':path', '/', ':authority', 'a']],
    ['a space in :path', [':method', 'GET', ':scheme', 'http', ':path', '/a b', ':authority', 'a']],
    ['a tab in :path', [':method', 'GET', ':scheme', 'http', ':path', '/a\tb', ':authority', 'a']],
    ['a control byte in :path', [':method', 'GET', ':scheme', 'http', ':path', '/a\x7f', ':authority', 'a']],
    ['an 8-bit byte in :path', [':method', 'GET', ':scheme', 'http', ':path', '/\u00e9', ':authority', 'a']],
    [':path not led by /', [':method', 'GET', ':scheme', 'http', ':path', 'a', ':authority', 'a']],
    [':path * without OPTIONS', [':method', 'GET', ':scheme', 'http', ':path', '*', ':authority', 'a']],
    ['a space in :authority', [':method', 'GET', ':scheme', 'http', ':path', '/', ':authority', 'a b']],
    ['userinfo in :authority', [':method', 'GET', ':scheme', 'http', ':path', '/', ':authority', 'u@a']],
    ['a slash in host', [':method', 'GET', ':scheme', 'http', ':path', '/', 'host', 'a/b']],
    ['no :authority nor host', [':method', 'GET', ':scheme', 'http', ':path', '/']],
    ['a space in :scheme', [':method', 'GET', ':scheme', 'ht tp', ':path', '/', ':authority', 'a']],
    ['CONNECT to a bad authority', [':method', 'CONNECT', ':authority', 'a b:443']],
  ];
  for (const [what, fields] of cases) assert.equal(typeof requestFields(fields), 'string', what);
});

test('OPTIONS * and a host without :authority are well formed; cookie fields are joined into one (RFC 9113 8.2.3)', () => {
  const star = requestFields([':method', 'OPTIONS', ':scheme', 'http', ':path', '*', ':authority', 'a']);
  assert.equal(typeof star === 'object' && star.path, '*');
  const hostOnly = requestFields([':method', 'GET', ':scheme', 'http', ':path', '/', 'host', 'a:80']);
  assert.equal(typeof hostOnly === 'object' && hostOnly.host, 'a:80');
  const cookies = requestFields([...GET, 'cookie', 'a=1', 'x-a', 'v', 'cookie', 'b=2', 'cookie', 'c=3']);
  assert.deepEqual(typeof cookies === 'object' && cookies.headers, ['cookie', 'a=1; b=2; c=3', 'x-a', 'v']);
});

test('trailers: regular fields only', () => {
  assert.equal(trailerProblem(['grpc-status', '0', 'x-a', 'v']), null);
  assert.match(trailerProblem([':path', '/']) ?? '', /pseudo-header/);
  assert.match(trailerProblem(['x-a', 'a\nb']) ?? '', /invalid value/);
  assert.match(trailerProblem(['X-A', 'v']) ?? '', /invalid field name/);
});

/*
 * Root cause: values were checked for NUL, CR and LF only (RFC 9113 8.2.1's minimum), so an
 * ESC, DEL or other control byte went on to HTTP/1 origins and into the text access logs (an
 * ANSI escape sequence in `user-agent`), where nghttp2, oghttp2 and the proxy's own HTTP/1
 * parser refuse it. HTAB, SP, visible ASCII and obs-text stay valid.
 */
test('a control byte other than HTAB in a value or a trailer is malformed; HTAB and bytes past ASCII are not', () => {
  for (let c = 0; c < 0x20; c++) {
    if (c === 9) continue;
    const ctl = String.fromCharCode(c);
    assert.equal(typeof requestFields([...GET, 'user-agent', `a${ctl}b`]), 'string', `byte ${c}`);
    assert.match(trailerProblem(['x-a', `a${ctl}b`]) ?? '', /invalid value/, `byte ${c}`);
  }
  assert.equal(typeof requestFields([...GET, 'user-agent', '\x1b[31mred']), 'string');
  assert.equal(typeof requestFields([...GET, 'x-a', 'a\x7fb']), 'string');
  const fine = requestFields([...GET, 'x-a', 'a\tb c\u00e9\u00ff~']);
  assert.deepEqual(typeof fine === 'object' && fine.headers, ['x-a', 'a\tb c\u00e9\u00ff~']);
});
