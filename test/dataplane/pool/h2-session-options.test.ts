/**
 * A cluster's `http2_protocol_options` reach its upstream sessions: the flood limits, which
 * were refused on a cluster while the pools ran on node:http2, act there as on the connection
 * manager. An upstream answering with empty DATA frames in a row (a flood past the reference's
 * default of 1) ends its session, unless the cluster allows that many.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { compileHttp2Options } from '../../../src/config/h2-options.js';
import { DEFAULT_FLOOD_LIMITS } from '../../../src/dataplane/codec/h2/limits.js';
import { upstreamSessionOptions } from '../../../src/dataplane/pool/h2-session-options.js';
import { compiled } from '../../helpers/compile.js';
import { FLAG, FRAME, frame, headersFrame } from '../../helpers/h2-frames.js';
import { hcmConfig, rawExchange, startProxy, type TestProxy } from '../../helpers/http-dataplane.js';
import { type ScriptedH2Upstream, scriptedH2Upstream } from '../../helpers/scripted-h2-upstream.js';

const ENHANCE_YOUR_CALM = 11;
const EMPTY_IN_A_ROW = 2;

let upstream: ScriptedH2Upstream;
let proxy: TestProxy;

before(async () => {
  upstream = await scriptedH2Upstream((c, id) => {
    const empty = frame(FRAME.DATA, 0, id);
    c.send(
      Buffer.concat([
        headersFrame(id, [[':status', '200']], false),
        ...Array.from({ length: EMPTY_IN_A_ROW }, () => empty),
        frame(FRAME.DATA, FLAG.END_STREAM, id, Buffer.from('ok')),
      ]),
    );
  });
  const at = [`127.0.0.1:${upstream.port}`];
  proxy = await startProxy(
    hcmConfig('strict', [{ match: { prefix: '/lenient' }, route: { cluster: 'lenient', timeout: '5s' } }], {
      timeout: '5s',
    }),
    [
      { raw: { name: 'strict', http2_protocol_options: {} }, addresses: at },
      {
        raw: {
          name: 'lenient',
          http2_protocol_options: { max_consecutive_inbound_frames_with_empty_payload: 3 },
        },
        addresses: at,
      },
    ],
  );
});

after(async () => {
  await proxy.close();
  upstream.close();
});

const get = (path: string) =>
  rawExchange(proxy.port, `GET ${path} HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n`, 5000);

test('the session options carry the compiled flood limits, the defaults without options', () => {
  const options = compiled((report) => compileHttp2Options({ max_outbound_frames: 50 }, 'c', report));
  assert.equal(upstreamSessionOptions(options).limits.maxOutboundFrames, 50);
  assert.deepEqual(upstreamSessionOptions(null).limits, DEFAULT_FLOOD_LIMITS);
});

test("a cluster's max_consecutive_inbound_frames_with_empty_payload lets the upstream's empty frames through; the default ends the session", async () => {
  assert.match(await get('/lenient'), /^HTTP\/1\.1 200 OK\r\n.*\r\n\r\n(2\r\nok\r\n0\r\n\r\n|ok)$/s);
  const strict = await get('/strict');
  // The head came with the flood, so the client gets a cut answer (here nothing at all).
  assert.doesNotMatch(strict, /ok/);
  const goaway = upstream.connections.flatMap((c) => c.frames()).find((f) => f.type === FRAME.GOAWAY);
  assert.equal(goaway?.payload.readUInt32BE(4), ENHANCE_YOUR_CALM);
});
