/**
 * A cluster's `stream_error_on_invalid_http_messaging` (and its override) act on a malformed
 * response. Root cause: the field was refused on a cluster while the pools' client reset only
 * the malformed response's stream whatever the config said, where the reference's default
 * (false) ends the whole upstream connection and only true keeps it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { JsonObject } from '../../../events/config.js';
import { FRAME, type Frame, headersFrame } from '../../helpers/h2-frames.js';
import { hcmConfig, rawExchange, startProxy } from '../../helpers/http-dataplane.js';
import { answerOk, scriptedH2Upstream } from '../../helpers/scripted-h2-upstream.js';

const PROTOCOL_ERROR = 1;
const GET = 'GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n';

/** The error code of the first frame of `type` the proxy sent, or null. */
function code(frames: Frame[], type: number): number | null {
  const f = frames.find((x) => x.type === type);
  if (!f) return null;
  return f.payload.readUInt32BE(type === FRAME.GOAWAY ? 4 : 0);
}

const CASES: Array<[string, JsonObject, boolean]> = [
  ['unset (the reference default)', {}, false],
  ['stream_error_on_invalid_http_messaging: true', { stream_error_on_invalid_http_messaging: true }, true],
  [
    'override_stream_error_on_invalid_http_message: true over the deprecated false',
    { override_stream_error_on_invalid_http_message: true, stream_error_on_invalid_http_messaging: false },
    true,
  ],
  [
    'override_stream_error_on_invalid_http_message: false over the deprecated true',
    { override_stream_error_on_invalid_http_message: false, stream_error_on_invalid_http_messaging: true },
    false,
  ],
];

for (const [name, options, streamOnly] of CASES)
  test(`${name}: a malformed response ${streamOnly ? 'resets only its stream' : 'ends the upstream connection'}`, async () => {
    let bad = true;
    const upstream = await scriptedH2Upstream((c, id) => {
      if (bad) c.send(headersFrame(id, [[':status', 'abc']], true));
      else answerOk(c, id);
      bad = false;
    });
    const proxy = await startProxy(hcmConfig('h2', [], { timeout: '5s' }), [
      { raw: { name: 'h2', http2_protocol_options: options }, addresses: [`127.0.0.1:${upstream.port}`] },
    ]);
    try {
      assert.match(await rawExchange(proxy.port, GET, 5000), /^HTTP\/1\.1 503 /);
      assert.match(await rawExchange(proxy.port, GET, 5000), /^HTTP\/1\.1 200 OK\r\n.*\r\n\r\nok$/s);
      const first = upstream.connections[0]?.frames() ?? [];
      assert.equal(code(first, FRAME.GOAWAY), streamOnly ? null : PROTOCOL_ERROR);
      assert.equal(code(first, FRAME.RST_STREAM), streamOnly ? PROTOCOL_ERROR : null);
      // Kept, the connection answers the next request; ended, a new one does.
      assert.equal(upstream.connections.length, streamOnly ? 1 : 2);
      assert.equal(proxy.counter('cluster.h2.upstream_cx_protocol_error'), streamOnly ? 0 : 1);
      assert.equal(proxy.counter('cluster.h2.http2.rx_messaging_error'), 1);
    } finally {
      await proxy.close();
      upstream.close();
    }
  });
