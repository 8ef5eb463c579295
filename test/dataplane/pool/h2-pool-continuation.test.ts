/**
 * An HTTP/2 upstream that answers with a HEADERS frame and then CONTINUATION frames without
 * end, against the real proxy process. Every flood is a 503 and the next request is served,
 * but now and then the process ABORTS: node:http2's native session (the upstream pools use
 * node:http2's client) fails `~Http2Session: current_nghttp2_memory_ == 0` when a garbage
 * collection frees a session that received such a flood, the assertion of CVE-2024-27983's
 * CONTINUATION race. Seen at the 40th flood in 1 run of about 12 (SIGABRT); in the test's own
 * process beside five other hostile upstreams (h2-pool-hostile.test.ts) 7 runs in 8. The fix
 * is outside the proxy's JavaScript: an upstream HTTP/2 client of the proxy's own (the
 * downstream already has one, src/dataplane/codec/h2) or a Node without the race. Until then
 * this test is a todo that names it, run so that it passes when the crash is gone.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { httpBootstrap, hcmWithRoutes } from '../../helpers/bootstraps.js';
import { FRAME, frame, headerBlock } from '../../helpers/h2-frames.js';
import { rawExchange } from '../../helpers/http-dataplane.js';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';
import { answerOk, type ScriptedH2Upstream, scriptedH2Upstream } from '../../helpers/scripted-h2-upstream.js';

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
  const cluster = {
    name: 'h2',
    connect_timeout: '1s',
    http2_protocol_options: {},
    load_assignment: {
      cluster_name: 'h2',
      endpoints: [
        {
          lb_endpoints: [
            {
              endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: upstream.port } } },
            },
          ],
        },
      ],
    },
  };
  proxy = await startProxyProcess(
    httpBootstrap(
      [cluster],
      hcmWithRoutes([{ match: { prefix: '/' }, route: { cluster: 'h2', timeout: '5s' } }]),
    ),
    ['--concurrency', '1'],
  );
  port = await proxy.listenerPort('http');
});

after(async () => {
  await proxy?.stop();
  upstream?.close();
});

test(`${FLOODS} HEADERS frames each followed by CONTINUATION frames without end: each a 503, the session closed, the process serving on`, {
  todo: 'a hostile upstream can abort the process: node:http2 CONTINUATION race (see the header)',
}, async () => {
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
