/**
 * An upstream HTTP/2 connection the proxy ends for the upstream's fault is counted, at
 * --concurrency 2, in `cluster.<name>.upstream_cx_protocol_error` and, for a flood, in
 * `cluster.<name>.http2.<flood>`. Root cause of the gap: the pool's session reported its
 * connection errors (with the flood that caused them) and the pool dropped the report, so the
 * connection just ended with no stat saying why, where the reference counts its upstream
 * codec errors and floods under the cluster.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { FRAME, frame, headersFrame } from '../../helpers/h2-frames.js';
import { rawExchange } from '../../helpers/http-dataplane.js';
import type { ProxyProcess } from '../../helpers/proxy-process.js';
import {
  proxyToScripted,
  pushPromise,
  type Script,
  type ScriptedNext,
  scriptedNextRequest,
} from '../../helpers/scripted-h2-upstream.js';

const GET = 'GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n';
const SETTLE_MS = 15000;

function repeat(bytes: Buffer, n: number): Buffer {
  return Buffer.concat(Array.from({ length: n }, () => bytes));
}

/** Each script ends the proxy's connection; the stat it must count. */
const HOSTILE: Array<[string, Script]> = [
  ['upstream_cx_protocol_error', pushPromise],
  [
    'http2.inbound_empty_frames_flood',
    // One write, so one read: a head read alone goes to the client at the end of its tick
    // (41620b2), and whether the flood then came in the same read was the timing of the
    // upstream's SETTINGS exchange.
    (c, id) =>
      c.send(
        Buffer.concat([headersFrame(id, [[':status', '200']], false), repeat(frame(FRAME.DATA, 0, id), 5)]),
      ),
  ],
  [
    'http2.inbound_priority_frames_flood',
    (c, id) => c.send(repeat(frame(FRAME.PRIORITY, 0, id, Buffer.from([0, 0, 0, 0, 15])), 300)),
  ],
  [
    'http2.inbound_window_update_frames_flood',
    (c) => c.send(repeat(frame(FRAME.WINDOW_UPDATE, 0, 0, Buffer.from([0, 0, 0, 1])), 50)),
  ],
];

let scripted: ScriptedNext;
let proxy: ProxyProcess;
let port: number;

before(async () => {
  scripted = await scriptedNextRequest();
  proxy = await proxyToScripted(scripted.upstream, 2);
  port = await proxy.listenerPort('http');
});

after(async () => {
  await proxy?.stop();
  scripted?.upstream.close();
});

/** The cluster's counter `name` as /stats shows it (0 when absent). */
async function counter(name: string): Promise<number> {
  const body = (await proxy.get(`/stats?filter=^cluster\\.h2\\.${name.replaceAll('.', '\\.')}$`)).body;
  const m = body.match(/: (\d+)\s*$/m);
  return m ? Number(m[1]) : 0;
}

test('each connection an upstream ends by a protocol error or a flood is counted under the cluster, across workers', async () => {
  for (const [name, script] of HOSTILE) {
    scripted.answerNextWith(script);
    assert.doesNotMatch(await rawExchange(port, GET, 5000), /^HTTP\/1\.1 200 /, name);
  }
  // Worker stats reach the admin's view when they are merged: wait for them, bounded.
  const want = (name: string) => (name === 'upstream_cx_protocol_error' ? HOSTILE.length : 1);
  const deadline = Date.now() + SETTLE_MS;
  let seen: Array<[string, number]> = [];
  do {
    seen = await Promise.all(HOSTILE.map(async ([name]) => [name, await counter(name)] as [string, number]));
    if (seen.every(([name, n]) => n === want(name))) break;
    await new Promise((r) => setTimeout(r, 200));
  } while (Date.now() < deadline);
  assert.deepEqual(
    seen,
    HOSTILE.map(([name]) => [name, want(name)]),
  );
  // A well-behaved answer still comes through after.
  assert.match(await rawExchange(port, GET, 5000), /^HTTP\/1\.1 200 OK\r\n.*\r\n\r\nok$/s);
  assert.equal(proxy.child.exitCode, null, proxy.stderr());
});
