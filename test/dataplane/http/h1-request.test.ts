/**
 * The fields an HTTP/1 request's `Connection` nominates, through a real listener to a
 * recording origin. Root cause: the codec dropped the `Connection` field itself but forwarded
 * the fields it names, which are this hop's (RFC 9110 7.6.1): they reached the origin as if
 * end-to-end. The reference removes them, and refuses a request nominating an `X-Forwarded-*`
 * field (whose removal would hide where the request came from), a pseudo-header, or ten
 * options or more.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
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
