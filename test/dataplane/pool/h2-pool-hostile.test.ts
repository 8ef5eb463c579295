/**
 * Hostile HTTP/2 upstreams (a server written frame by frame) through the pool.
 * Root cause of the one that failed: node:http2 clients accept server push by default, and the
 * pool never turned it off nor read pushed streams, so an upstream could open any number of
 * pushed streams, each kept open holding up to a window of data until the session ended (200
 * pushes of 60 KB held 35 MB). The reference's client codec sends `ENABLE_PUSH 0`; a
 * PUSH_PROMISE after it is a connection error (RFC 9113 8.4). The other cases already held and
 * are kept here: each ends in a 5xx or a cut response, never a crash, and the next request on
 * a new stream is answered. The CONTINUATION flood runs against a proxy process, in
 * h2-pool-continuation.test.ts (its header says why).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { FLAG, FRAME, frame, headersFrame } from '../../helpers/h2-frames.js';
import { hcmConfig, rawExchange, startProxy, type TestProxy } from '../../helpers/http-dataplane.js';
import {
  answerOk,
  pushPromise,
  type Script,
  type ScriptedConnection,
  type ScriptedNext,
  scriptedNextRequest,
} from '../../helpers/scripted-h2-upstream.js';

const SETTINGS_ENABLE_PUSH = 2;
const PROTOCOL_ERROR = 1;

/** `through` scripts the next request. */
let scripted: ScriptedNext;
let proxy: TestProxy;

before(async () => {
  scripted = await scriptedNextRequest();
  proxy = await startProxy(hcmConfig('h2', [], { timeout: '5s' }), [
    { raw: { name: 'h2', http2_protocol_options: {} }, addresses: [`127.0.0.1:${scripted.upstream.port}`] },
  ]);
});

after(async () => {
  await proxy.close();
  scripted.upstream.close();
});

const GET = 'GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n';

/** Sends one request with `script` answering it, then checks a plain one is answered after. */
async function through(script: Script): Promise<string> {
  scripted.answerNextWith(script);
  const answer = await rawExchange(proxy.port, GET, 5000);
  assert.match(await rawExchange(proxy.port, GET, 5000), /^HTTP\/1\.1 200 OK\r\n.*\r\n\r\nok$/s);
  return answer;
}

test('the pool offers no server push, and a PUSH_PROMISE sent anyway ends the session (GOAWAY PROTOCOL_ERROR)', async () => {
  let session: ScriptedConnection | undefined;
  const answer = await through((c, id) => {
    session = c;
    pushPromise(c, id);
    answerOk(c, id);
  });
  assert.match(answer, /^HTTP\/1\.1 503 /);
  assert.ok(session);
  const { upstream } = scripted;
  assert.equal(upstream.settings(upstream.connections.indexOf(session)).get(SETTINGS_ENABLE_PUSH), 0);
  const goaway = session.frames().find((f) => f.type === FRAME.GOAWAY);
  assert.equal(goaway?.payload.readUInt32BE(4), PROTOCOL_ERROR);
});

test('a :status that is no status, or none, is a 503 before any byte of the response', async () => {
  for (const fields of [[[':status', '20']], [[':status', 'abc']], [['x-no-status', '1']]] as Array<
    Array<[string, string]>
  >)
    assert.match(await through((c, id) => c.send(headersFrame(id, fields, true))), /^HTTP\/1\.1 503 /);
});

test('response fields an HTTP/2 upstream must not send (uppercase, connection-specific, 500 of them) are a 503', async () => {
  const many: Array<[string, string]> = [[':status', '200']];
  for (let i = 0; i < 500; i++) many.push([`x-${i}`, 'v']);
  for (const fields of [
    [
      [':status', '200'],
      ['X-Upper', 'a'],
    ],
    [
      [':status', '200'],
      ['transfer-encoding', 'chunked'],
    ],
    many,
  ] as Array<Array<[string, string]>>)
    assert.match(await through((c, id) => c.send(headersFrame(id, fields, true))), /^HTTP\/1\.1 503 /);
});

test('a CR LF in a response field value never reaches the client as a field', async () => {
  const answer = await through((c, id) =>
    c.send(
      headersFrame(
        id,
        [
          [':status', '200'],
          ['x-up', 'a\r\nInjected: 1'],
        ],
        true,
      ),
    ),
  );
  assert.doesNotMatch(answer, /injected/i);
});

test('a body cut by RST_STREAM, short of its content-length, or trailers with a pseudo-header: the client response is cut', async () => {
  const cuts: Script[] = [
    (c, id) =>
      c.send(
        Buffer.concat([
          headersFrame(id, [[':status', '200']], false),
          frame(FRAME.DATA, 0, id, Buffer.from('partial')),
          frame(FRAME.RST_STREAM, 0, id, Buffer.from([0, 0, 0, 2])),
        ]),
      ),
    (c, id) =>
      c.send(
        Buffer.concat([
          headersFrame(
            id,
            [
              [':status', '200'],
              ['content-length', '10'],
            ],
            false,
          ),
          frame(FRAME.DATA, FLAG.END_STREAM, id, Buffer.from('ok')),
        ]),
      ),
    (c, id) =>
      c.send(
        Buffer.concat([
          headersFrame(id, [[':status', '200']], false),
          frame(FRAME.DATA, 0, id, Buffer.from('ok')),
          headersFrame(
            id,
            [
              [':status', '200'],
              ['grpc-status', '0'],
            ],
            true,
          ),
        ]),
      ),
  ];
  for (const cut of cuts) {
    const answer = await through(cut);
    assert.match(answer, /^HTTP\/1\.1 200 OK\r\n/);
    // Chunked without its last chunk, or fewer bytes than the length said: the client sees the cut.
    assert.ok(!answer.endsWith('0\r\n\r\n') && !/content-length: 10\r\n\r\n.{10}$/s.test(answer), answer);
  }
});
