/**
 * The HTTP/2 client session against a server written frame by frame, on real sockets: what a
 * well-behaved upstream sends arrives as heads, bodies and trailers; what a hostile one sends
 * (pushes, malformed heads, CONTINUATION floods, random frames) ends a stream or the
 * connection, never in an exception or unbounded buffering.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, test } from 'node:test';
import fc from 'fast-check';
import {
  type ClientEvents,
  ClientSession,
  type ResponseHandler,
} from '../../../../src/dataplane/codec/h2/client-session.js';
import { DEFAULT_FLOOD_LIMITS } from '../../../../src/dataplane/codec/h2/limits.js';
import { FLAG, FRAME, frame, headerBlock, headersFrame } from '../../../helpers/h2-frames.js';
import { type ScriptedConnection, scriptedH2Upstream } from '../../../helpers/scripted-h2-upstream.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 100);
const PUSH_PROMISE = 5;
const CONTINUATION = 9;
const SETTINGS_ENABLE_PUSH = 2;
const SETTINGS_MAX_CONCURRENT_STREAMS = 3;
const ERR = { PROTOCOL: 1, REFUSED: 7, CANCEL: 8, CALM: 11 };

const OPTIONS = {
  headerTableSize: 4096,
  maxConcurrentStreams: null,
  initialWindowSize: 65535,
  connectionWindowSize: 65535,
  maxHeaderListSize: 80 * 1024,
  maxHeadersCount: 100,
  streamErrorOnInvalidMessaging: true,
  limits: DEFAULT_FLOOD_LIMITS,
};

type Script = (c: ScriptedConnection, id: number) => void;
let script: Script = () => {};
const upstream = await scriptedH2Upstream((c, id) => script(c, id));
const limited = await scriptedH2Upstream((c, id) => script(c, id), [[SETTINGS_MAX_CONCURRENT_STREAMS, 1]]);
after(() => {
  upstream.close();
  limited.close();
});

/** What one request heard, in order, and how its stream closed. */
interface Heard {
  events: string[];
  closed: Promise<number>;
}

function recorder(): { handler: ResponseHandler; heard: Heard } {
  const events: string[] = [];
  let close: (code: number) => void = () => {};
  const closed = new Promise<number>((resolve) => {
    close = resolve;
  });
  const handler: ResponseHandler = {
    onHead: (status, headers, length, end) =>
      events.push(`head ${status} ${headers.join(',')} ${length} ${end}`),
    onData: (chunk) => events.push(`data ${chunk.toString()}`),
    onEnd: (trailers) => events.push(`end ${trailers?.join(',') ?? ''}`),
    onClose: (code) => close(code),
    onDrain: () => {},
  };
  return { handler, heard: { events, closed } };
}

interface Opened {
  session: ClientSession;
  errors: number[];
  goaways: number[];
  closed: Promise<void>;
}

async function connect(port: number): Promise<Opened> {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  const errors: number[] = [];
  const goaways: number[] = [];
  let done: () => void = () => {};
  const closed = new Promise<void>((resolve) => {
    done = resolve;
  });
  const events: ClientEvents = {
    onMalformed() {},
    onMessagingError() {},
    onTrailerOverflow() {},
    onConnectionError: (code) => errors.push(code),
    onClose: () => done(),
    onGoAway: (last) => goaways.push(last),
  };
  return { session: new ClientSession(socket, OPTIONS, events), errors, goaways, closed };
}

/** Waits (up to 5 s) for the upstream to have read a GOAWAY; returns its error code. */
async function goawayCode(c: ScriptedConnection): Promise<number | undefined> {
  for (let i = 0; i < 500; i++) {
    const goaway = c.frames().find((f) => f.type === FRAME.GOAWAY);
    if (goaway) return goaway.payload.readUInt32BE(4);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return undefined;
}

function get(path = '/'): string[] {
  return [':method', 'GET', ':scheme', 'http', ':authority', 'a.test', ':path', path];
}

test('a request: preface, SETTINGS without push, odd stream ids; head, body and trailers heard in order', async () => {
  script = (c, id) =>
    c.send(
      Buffer.concat([
        headersFrame(
          id,
          [
            [':status', '103'],
            ['link', '</a>'],
          ],
          false,
        ),
        headersFrame(
          id,
          [
            [':status', '200'],
            ['content-length', '2'],
            ['x-a', 'b'],
          ],
          false,
        ),
        frame(FRAME.DATA, 0, id, Buffer.from('ok')),
        headersFrame(id, [['grpc-status', '0']], true),
      ]),
    );
  const { session } = await connect(upstream.port);
  const first = recorder();
  const second = recorder();
  session.request(get(), true, false, first.handler);
  session.request(get('/2'), true, false, second.handler);
  assert.equal(await first.heard.closed, -1);
  assert.equal(await second.heard.closed, -1);
  assert.deepEqual(first.heard.events, [
    'head 200 content-length,2,x-a,b 2 false',
    'data ok',
    'end grpc-status,0',
  ]);
  const c = upstream.connections.at(-1) as ScriptedConnection;
  const heads = c.frames().filter((f) => f.type === FRAME.HEADERS);
  assert.deepEqual(
    heads.map((f) => f.streamId),
    [1, 3],
  );
  assert.equal(upstream.settings(upstream.connections.length - 1).get(SETTINGS_ENABLE_PUSH), 0);
  session.destroy();
});

test('a request body goes out as DATA and the stream ends with the request trailers', async () => {
  script = (c, id) => c.send(headersFrame(id, [[':status', '204']], true));
  const { session } = await connect(upstream.port);
  const { handler, heard } = recorder();
  const stream = session.request([...get(), 'te', 'trailers'], false, false, handler);
  stream.write(Buffer.from('hello'));
  stream.end(['x-t', '1']);
  assert.equal(await heard.closed, -1);
  const c = upstream.connections.at(-1) as ScriptedConnection;
  const data = c.frames().filter((f) => f.type === FRAME.DATA);
  assert.equal(Buffer.concat(data.map((f) => f.payload)).toString(), 'hello');
  const trailers = c.frames().filter((f) => f.type === FRAME.HEADERS)[1];
  assert.equal((trailers?.flags ?? 0) & FLAG.END_STREAM, FLAG.END_STREAM);
  session.destroy();
});

test("the peer's MAX_CONCURRENT_STREAMS: a second request waits until the first closes", async () => {
  const held: Array<() => void> = [];
  script = (c, id) => held.push(() => c.send(headersFrame(id, [[':status', '200']], true)));
  const { session } = await connect(limited.port);
  const first = recorder();
  const second = recorder();
  session.request(get(), true, false, first.handler);
  await new Promise((resolve) => setTimeout(resolve, 50));
  session.request(get(), true, false, second.handler);
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(held.length, 1, 'the second request waits');
  held[0]?.();
  assert.equal(await first.heard.closed, -1);
  while (held.length < 2) await new Promise((resolve) => setTimeout(resolve, 10));
  held[1]?.();
  assert.equal(await second.heard.closed, -1);
  session.destroy();
});

test('GOAWAY: streams at or below its last stream id finish, those above close as REFUSED_STREAM', async () => {
  const ids: number[] = [];
  let conn: ScriptedConnection | undefined;
  script = (c, id) => {
    ids.push(id);
    conn = c;
  };
  const { session, goaways } = await connect(upstream.port);
  const a = recorder();
  const b = recorder();
  session.request(get(), true, false, a.handler);
  session.request(get(), true, false, b.handler);
  while (ids.length < 2) await new Promise((resolve) => setTimeout(resolve, 10));
  const goaway = Buffer.alloc(8);
  goaway.writeUInt32BE(1);
  conn?.send(Buffer.concat([frame(FRAME.GOAWAY, 0, 0, goaway), headersFrame(1, [[':status', '200']], true)]));
  assert.equal(await b.heard.closed, ERR.REFUSED);
  assert.equal(await a.heard.closed, -1);
  assert.deepEqual(goaways, [1]);
  assert.ok(session.closed);
  const late = recorder();
  session.request(get(), true, false, late.handler);
  assert.equal(await late.heard.closed, ERR.REFUSED);
  session.destroy();
});

/** Sends one request answered by `answer`; returns how its stream closed and the connection errors. */
async function answered(
  answer: Script,
): Promise<{ code: number; events: string[]; errors: number[]; c: ScriptedConnection }> {
  let conn: ScriptedConnection | undefined;
  script = (c, id) => {
    conn = c;
    answer(c, id);
  };
  const { session, errors } = await connect(upstream.port);
  const { handler, heard } = recorder();
  session.request(get(), true, false, handler);
  const code = await heard.closed;
  session.destroy();
  return { code, events: heard.events, errors, c: conn as ScriptedConnection };
}

test('malformed response heads reset their stream (PROTOCOL_ERROR) before the user hears a head', async () => {
  const many: Array<[string, string]> = [[':status', '200']];
  for (let i = 0; i < 150; i++) many.push([`x-${i}`, 'v']);
  for (const fields of [
    [[':status', '20']],
    [[':status', '101']],
    [['x-no-status', '1']],
    [
      [':status', '200'],
      [':path', '/'],
    ],
    [
      [':status', '200'],
      ['X-Upper', 'a'],
    ],
    [
      [':status', '200'],
      ['transfer-encoding', 'chunked'],
    ],
    [
      [':status', '200'],
      ['x-a', 'a\r\nb: 1'],
    ],
    [
      [':status', '200'],
      ['content-length', '1'],
      ['content-length', '2'],
    ],
    [
      [':status', '200'],
      ['content-length', '5'],
    ],
    many,
  ] as Array<Array<[string, string]>>) {
    const { code, events } = await answered((c, id) => c.send(headersFrame(id, fields, true)));
    assert.equal(code, ERR.PROTOCOL, JSON.stringify(fields.slice(0, 2)));
    assert.deepEqual(events, []);
  }
});

test('a body short of or beyond its content-length, or trailers with a pseudo-header, reset the stream', async () => {
  const head = headersFrame(
    1,
    [
      [':status', '200'],
      ['content-length', '3'],
    ],
    false,
  );
  for (const rest of [
    frame(FRAME.DATA, FLAG.END_STREAM, 1, Buffer.from('ok')),
    frame(FRAME.DATA, FLAG.END_STREAM, 1, Buffer.from('okay')),
    Buffer.concat([frame(FRAME.DATA, 0, 1, Buffer.from('abc')), headersFrame(1, [[':status', '200']], true)]),
  ]) {
    const { code, events } = await answered((c) => c.send(Buffer.concat([head, rest])));
    assert.equal(code, ERR.PROTOCOL);
    assert.ok(!events.some((e) => e.startsWith('end')), events.join('|'));
  }
  const early = await answered((c, id) => c.send(frame(FRAME.DATA, FLAG.END_STREAM, id, Buffer.from('ok'))));
  assert.equal(early.code, ERR.PROTOCOL, 'DATA before the head');
  const reset = await answered((c, id) =>
    c.send(
      Buffer.concat([
        headersFrame(id, [[':status', '200']], false),
        frame(FRAME.RST_STREAM, 0, id, Buffer.from([0, 0, 0, 2])),
      ]),
    ),
  );
  assert.equal(reset.code, 2);
});

test('a PUSH_PROMISE, after our ENABLE_PUSH 0, is a connection error (GOAWAY PROTOCOL_ERROR)', async () => {
  const { code, errors, c } = await answered((c, id) => {
    const promised = Buffer.alloc(4);
    promised.writeUInt32BE(id + 1);
    c.send(
      frame(PUSH_PROMISE, FLAG.END_HEADERS, id, Buffer.concat([promised, headerBlock([[':method', 'GET']])])),
    );
  });
  assert.equal(code, ERR.PROTOCOL);
  assert.deepEqual(errors, [ERR.PROTOCOL]);
  assert.equal(await goawayCode(c), ERR.PROTOCOL);
});

test('CONTINUATION frames without end: the connection ends (ENHANCE_YOUR_CALM) before the block grows past its cap', async () => {
  for (const size of [100, 1]) {
    const { code, errors, c } = await answered((c, id) => {
      c.send(frame(FRAME.HEADERS, 0, id, headerBlock([[':status', '200']])));
      const more = frame(CONTINUATION, 0, id, Buffer.alloc(size, 0x80 - 1));
      for (let i = 0; i < 5000 && !c.socket.destroyed; i++) c.send(more);
    });
    assert.equal(code, ERR.CALM, `CONTINUATION of ${size} bytes`);
    assert.deepEqual(errors, [ERR.CALM]);
    assert.equal(await goawayCode(c), ERR.CALM);
  }
});

test('random frames from the upstream end in responses, resets or a GOAWAY, never an exception', async () => {
  const anyFrame = fc.tuple(
    fc.integer({ min: 0, max: 10 }),
    fc.integer({ min: 0, max: 255 }),
    fc.constantFrom(0, 1, 2, 3, 5, 0x7fffffff),
    fc.oneof(
      fc.uint8Array({ maxLength: 24 }),
      fc.constant(new Uint8Array(headerBlock([[':status', '200']]))),
      fc.constant(new Uint8Array([0x88])),
      fc.constant(new Uint8Array([0, 0, 0, 1])),
      fc.constant(new Uint8Array([0, 0, 0, 1, 0, 0, 0, 0])),
    ),
  );
  await fc.assert(
    fc.asyncProperty(fc.array(anyFrame, { maxLength: 12 }), async (frames) => {
      const bytes = Buffer.concat(
        frames.map(([type, flags, id, payload]) => frame(type, flags, id, Buffer.from(payload))),
      );
      let sent = false;
      script = (c) => {
        if (sent) return;
        sent = true;
        c.send(bytes);
        // What the frames left open is cut, so every stream ends.
        setTimeout(() => c.socket.destroy(), 20);
      };
      const { session, closed } = await connect(upstream.port);
      const streams = [recorder(), recorder()];
      for (const r of streams) session.request(get(), false, false, r.handler).end();
      for (const r of streams) assert.equal(typeof (await r.heard.closed), 'number');
      await closed;
    }),
    { numRuns: RUNS, seed: 2828 },
  );
});
