/**
 * The reference's HTTP/2 flood limits (`http2_protocol_options`) on the downstream codec: each
 * ends the connection with GOAWAY ENHANCE_YOUR_CALM, counts its `http2.*` stat, and closes the
 * socket. Before our own codec, node:http2 could count none of them and the fields were refused.
 * Malformed fields (RFC 9113 8.2.1), which node:http2 dropped before forwarding the request,
 * reset the stream, are counted, and are logged with DPE.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { StreamInfo } from '../../../src/dataplane/access-log/stream-info.js';
import { flagsText } from '../../../src/dataplane/access-log/stream-info.js';
import { FRAME, frame, headersFrame, outcome, rawH2 } from '../../helpers/h2-frames.js';
import { hcmConfig, loggedStreams, type TestProxy, withTestProxy } from '../../helpers/http-dataplane.js';

const DIRECT = { match: { prefix: '/' }, direct_response: { status: 200, body: { inline_string: 'ok' } } };

async function withProxy(
  h2: Record<string, unknown>,
  run: (proxy: TestProxy, logged: StreamInfo[]) => Promise<void>,
) {
  await withTestProxy({ ...hcmConfig('none', [DIRECT]), http2_protocol_options: h2 }, [], (proxy) =>
    run(proxy, loggedStreams(proxy)),
  );
}

const GET: Array<[string, string]> = [
  [':method', 'GET'],
  [':scheme', 'http'],
  [':path', '/'],
  [':authority', 'a.test'],
];
const POST: Array<[string, string]> = [[':method', 'POST'], ...GET.slice(1)];

const u32 = (n: number) => Buffer.from([n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]);
const times = (n: number, make: () => Buffer) => Buffer.concat(Array.from({ length: n }, make));

const FLOODS: Array<[string, Record<string, unknown>, () => Buffer]> = [
  [
    'outbound_flood',
    { max_outbound_frames: 20 },
    () => times(50, () => frame(FRAME.PING, 0, 0, Buffer.alloc(8))),
  ],
  [
    'outbound_control_flood',
    { max_outbound_control_frames: 10 },
    () => times(50, () => frame(FRAME.PING, 0, 0, Buffer.alloc(8))),
  ],
  // The reference's default: one empty frame without END_STREAM is allowed, two in a row are not.
  [
    'inbound_empty_frames_flood',
    {},
    () => Buffer.concat([headersFrame(1, POST, false), frame(FRAME.DATA, 0, 1), frame(FRAME.DATA, 0, 1)]),
  ],
  // 2 * (1 + streams opened): 2 before any stream.
  [
    'inbound_priority_frames_flood',
    { max_inbound_priority_frames_per_stream: 2 },
    () => times(3, () => frame(FRAME.PRIORITY, 0, 1, Buffer.from([0, 0, 0, 0, 16]))),
  ],
  // 1 + 2 * (streams opened + 10 * DATA frames sent): 1 before anything.
  ['inbound_window_update_frames_flood', {}, () => times(2, () => frame(FRAME.WINDOW_UPDATE, 0, 0, u32(1)))],
];

for (const [stat, h2, make] of FLOODS) {
  test(`${stat}: GOAWAY ENHANCE_YOUR_CALM, http2.${stat} counted, the connection closed`, async () => {
    await withProxy(h2, async (proxy) => {
      const conn = await rawH2(proxy.port);
      conn.send(make());
      const frames = await conn.until((f) => f.some((x) => x.type === FRAME.GOAWAY), 5000);
      assert.equal(outcome(frames, 0x7fffffff), 'GOAWAY 11');
      assert.equal(await conn.closed(5000), true, 'the proxy closed the connection');
      assert.equal(proxy.counter(`http2.${stat}`), 1);
      assert.equal(proxy.counter('http.ingress.downstream_cx_protocol_error'), 1);
    });
  });
}

test('under the limits nothing is a flood: a priority and a window update per request, one empty DATA', async () => {
  await withProxy({}, async (proxy) => {
    const conn = await rawH2(proxy.port);
    for (let id = 1; id <= 9; id += 2) {
      conn.send(frame(FRAME.PRIORITY, 0, id, Buffer.from([0, 0, 0, 0, 16])));
      conn.send(frame(FRAME.WINDOW_UPDATE, 0, 0, u32(100)));
      conn.send(headersFrame(id, POST, false));
      conn.send(Buffer.concat([frame(FRAME.DATA, 0, id), frame(FRAME.DATA, 1, id, Buffer.from('x'))]));
    }
    const frames = await conn.until((f) => outcome(f, 9) !== 'nothing', 5000);
    conn.socket.destroy();
    for (let id = 1; id <= 9; id += 2) assert.equal(outcome(frames, id), 'response', `stream ${id}`);
  });
});

const MALFORMED: Array<[string, [string, string]]> = [
  ['CR in a value', ['x-a', 'a\rb']],
  ['LF in a value', ['x-a', 'a\nb']],
  ['NUL in a value', ['x-a', 'a\0b']],
  ['an uppercase name', ['X-Up', 'v']],
  ['a space in a name', ['x a', 'v']],
  ['a colon in a name', ['x:a', 'v']],
  ['an empty name', ['', 'v']],
];

test('malformed fields reset the stream with PROTOCOL_ERROR, counted and logged with DPE; the connection goes on', async () => {
  await withProxy({}, async (proxy, logged) => {
    const conn = await rawH2(proxy.port);
    let id = 1;
    for (const [what, field] of MALFORMED) {
      conn.send(
        headersFrame(id, [...GET.slice(0, 2), [':path', `/${id}`], GET[3] as [string, string], field], true),
      );
      const frames = await conn.until((f) => outcome(f, id) !== 'nothing', 5000);
      assert.equal(outcome(frames, id), 'RST_STREAM 1', what);
      id += 2;
    }
    conn.send(headersFrame(id, GET, true));
    assert.equal(outcome(await conn.until((f) => outcome(f, id) !== 'nothing', 5000), id), 'response');
    conn.socket.destroy();
    assert.equal(proxy.counter('http2.rx_messaging_error'), MALFORMED.length);
    const refused = logged.filter((i) => flagsText(i.flags) === 'DPE').map((i) => i.request?.path);
    assert.equal(refused.length, MALFORMED.length, refused.join(' '));
    assert.equal(refused[0], '/1');
  });
});
