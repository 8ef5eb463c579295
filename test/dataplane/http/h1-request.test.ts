/**
 * The fields an HTTP/1 request's `Connection` nominates, through a real listener to a
 * recording origin. Root cause: the codec dropped the `Connection` field itself but forwarded
 * the fields it names, which are this hop's (RFC 9110 7.6.1): they reached the origin as if
 * end-to-end. The reference removes them, and refuses a request nominating an `X-Forwarded-*`
 * field (whose removal would hide where the request came from), a pseudo-header, or ten
 * options or more.
 */
import assert from 'node:assert/strict';
import * as http2 from 'node:http2';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { hcmConfig, rawExchange, startProxy, type TestProxy } from '../../helpers/http-dataplane.js';
import { type RecordingOrigin, recordingOrigin } from '../../helpers/recording-origin.js';

let origin: RecordingOrigin;
let proxy: TestProxy;

before(async () => {
  origin = await recordingOrigin();
  proxy = await startProxy(hcmConfig('origin'), [
    { raw: { name: 'origin' }, addresses: [`127.0.0.1:${origin.port}`] },
  ]);
});

after(async () => {
  await proxy.close();
  origin.close();
});

/** The status answered to a GET with `fields`, and the header names the origin got (null: none came). */
async function send(fields: string): Promise<{ status: string; names: string[] | null }> {
  origin.reset();
  const out = await rawExchange(proxy.port, `GET /c HTTP/1.1\r\nHost: a.test\r\n${fields}\r\n`, 2000);
  const [req] = origin.requests;
  return {
    status: out.slice(9, 12),
    names: req ? req.lines.slice(1).map((l) => (l.split(':')[0] as string).toLowerCase()) : null,
  };
}

test('the fields Connection nominates do not reach the origin; the others do', async () => {
  const { status, names } = await send(
    'Connection: keep-alive, X-Hop\r\nConnection: close, x-other-hop\r\nX-Hop: 1\r\nX-Other-Hop: 2\r\nX-End: 3\r\n',
  );
  assert.equal(status, '200');
  assert.ok(names?.includes('x-end'), String(names));
  assert.ok(!names?.includes('x-hop') && !names?.includes('x-other-hop'), String(names));
  assert.ok(!names?.includes('connection'), String(names));
});

test('nominating X-Forwarded-For, -Host or -Proto, a pseudo-header, or ten options is a 400 that never reaches the origin', async () => {
  for (const connection of [
    'close, X-Forwarded-For',
    'x-forwarded-host',
    'X-Forwarded-Proto',
    ':authority',
    'a, b, c, d, e, f, g, h, i, j',
  ]) {
    const { status, names } = await send(`Connection: ${connection}\r\n`);
    assert.equal(status, '400', connection);
    assert.equal(names, null, connection);
  }
  // Nine are fine, and close, keep-alive and te name no field.
  const { status } = await send('Connection: te, close, keep-alive, a, b, c, d, e, f\r\nTE: trailers\r\n');
  assert.equal(status, '200');
});

// Root cause: the HTTP/1 codec dropped `TE` whole, while an HTTP/2 request's `te: trailers`
// went on, so a gRPC origin behind HTTP/1 clients never saw it. The reference keeps the
// `trailers` member only, from either codec.
test('TE keeps its trailers member only, once, from HTTP/1 as from HTTP/2', async () => {
  const te = async (fields: string) => {
    origin.reset();
    await rawExchange(
      proxy.port,
      `GET /c HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n${fields}\r\n`,
      2000,
    );
    return origin.requests[0]?.lines.filter((l) => /^te:/i.test(l));
  };
  assert.deepEqual(await te('TE: trailers\r\n'), ['te: trailers']);
  assert.deepEqual(await te('TE: gzip;q=0.5, Trailers\r\nTE: trailers\r\n'), ['te: trailers']);
  assert.deepEqual(await te('TE: gzip, x-trailers\r\n'), []);
  origin.reset();
  const session = http2.connect(`http://127.0.0.1:${proxy.port}`);
  try {
    await new Promise<void>((resolve, reject) => {
      const stream = session.request({ ':path': '/c', te: 'trailers' });
      stream.setTimeout(5000, () => stream.destroy(new Error('timeout')));
      stream.on('error', reject);
      stream.on('end', resolve);
      stream.resume();
    });
  } finally {
    session.destroy();
  }
  assert.deepEqual(
    origin.requests[0]?.lines.filter((l) => /^te:/i.test(l)),
    ['te: trailers'],
  );
});

// Root cause guarded: the request's fields are now the parser's array compacted in place, with
// room left past them for the edge's; a slip in the compaction would drop, repeat or reorder
// end-to-end fields, or leave a hole the upstream head would write as `undefined`.
const RUNS = Number(process.env.FUZZ_RUNS ?? 40);
/** What the proxy itself adds on the way (the edge's fields, and `x-proxy-*` ones filtered by prefix). */
const EDGE_ADDED = new Set(['x-forwarded-for', 'x-forwarded-proto', 'x-request-id']);
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'trailer', 'upgrade']);

test('property: every end-to-end field reaches the origin once, in order, whatever hop-by-hop fields lie between', async () => {
  const field = fc.constantFrom(
    'Accept: */*',
    'X-A: 1',
    'x-b:  two ',
    'Cookie: c=3',
    'X-A: again',
    'Keep-Alive: timeout=5',
    'Proxy-Connection: keep-alive',
    'TE: trailers',
    'Trailer: x-t',
    'Connection: keep-alive',
    'Upgrade: websocket',
  );
  await fc.assert(
    fc.asyncProperty(fc.array(field, { maxLength: 24 }), async (fields) => {
      // `Connection: close` (hop-by-hop too) ends each exchange without waiting for the timeout.
      const got = await send(`${fields.map((f) => `${f}\r\n`).join('')}Connection: close\r\n`);
      assert.equal(got.status, '200');
      // `te: trailers` goes on once, where the first came.
      const expected = fields
        .map((f) => (f.split(':')[0] as string).toLowerCase())
        .filter((n, i, all) => !HOP.has(n) && (n !== 'te' || all.indexOf('te') === i));
      assert.deepEqual(
        (got.names as string[]).filter(
          (n) => n !== 'host' && !EDGE_ADDED.has(n) && !n.startsWith('x-proxy-'),
        ),
        expected,
      );
    }),
    { seed: 28, numRuns: RUNS },
  );
});
