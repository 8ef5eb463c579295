/**
 * An HTTP/2 upstream that answers with a HEADERS frame and then CONTINUATION frames without
 * end, against the real proxy process. Root cause of the crash it caught: the upstream pools
 * ran on node:http2's client, whose native session now and then ABORTED the process
 * (`~Http2Session: current_nghttp2_memory_ == 0`, CVE-2024-27983's CONTINUATION race, when a
 * garbage collection freed a session that received such a flood; about 1 run in 12 here, 7 in
 * 8 beside other hostile upstreams). The pools now run on the proxy's own codec
 * (src/dataplane/codec/h2/client-session.ts), which ends the connection once a header block
 * passes 256 KiB or 64 CONTINUATION frames: every flood is a 503, the process serves on.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { FRAME, frame, headerBlock } from '../../helpers/h2-frames.js';
import { rawExchange } from '../../helpers/http-dataplane.js';
import type { ProxyProcess } from '../../helpers/proxy-process.js';
import {
  answerOk,
  proxyToScripted,
  type ScriptedH2Upstream,
  scriptedH2Upstream,
} from '../../helpers/scripted-h2-upstream.js';

const FRAME_CONTINUATION = 9;
const FLOODS = 50;
const GET = 'GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n';

let flood = true;
let upstream: ScriptedH2Upstream;
let proxy: ProxyProcess;
let port: number;

before(async () => {
  upstream = await scriptedH2Upstream((c, id) => {
    if (!flood) {
      answerOk(c, id);
      return;
    }
    c.send(frame(FRAME.HEADERS, 0, id, headerBlock([[':status', '200']])));
    const more = frame(FRAME_CONTINUATION, 0, id, headerBlock([['x-a', 'b'.repeat(100)]]));
    for (let i = 0; i < 5000 && !c.socket.destroyed; i++) c.send(more);
  });
  proxy = await proxyToScripted(upstream, 1);
  port = await proxy.listenerPort('http');
});

after(async () => {
  await proxy?.stop();
  upstream?.close();
});

test(`${FLOODS} HEADERS frames each followed by CONTINUATION frames without end: each a 503, the session closed, the process serving on`, async () => {
  for (let i = 0; i < FLOODS; i++)
    assert.match(
      await rawExchange(port, GET, 5000),
      /^HTTP\/1\.1 503 /,
      `flood ${i} (exit ${proxy.child.exitCode} ${proxy.child.signalCode}): ${proxy.stderr()}`,
    );
  // The session a flood arrived on is not used again: each flood came on a connection of its own.
  assert.equal(upstream.connections.length, FLOODS);
  flood = false;
  assert.match(await rawExchange(port, GET, 5000), /^HTTP\/1\.1 200 OK\r\n.*\r\n\r\nok$/s);
  assert.equal(proxy.child.exitCode, null, proxy.stderr());
});
