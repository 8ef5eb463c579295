/**
 * The HTTP/2 server session on real sockets, driven by raw frames: flow control both ways
 * (never beyond the peer's window; the peer's window given back only as the reader consumes),
 * random frames, which must end in answers or a GOAWAY and never in an exception, and header
 * blocks whose few bytes name a large table entry again and again (an HPACK bomb).
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import type { SessionEvents } from '../../../../src/dataplane/codec/h2/connection.js';
import { DEFAULT_FLOOD_LIMITS } from '../../../../src/dataplane/codec/h2/limits.js';
import { ServerSession } from '../../../../src/dataplane/codec/h2/session.js';
import type { ServerStream } from '../../../../src/dataplane/codec/h2/stream.js';
import {
  FLAG,
  FRAME,
  type Frame,
  frame,
  headerBlock,
  headersFrame,
  PREFACE,
  parseFrames,
  rawH2,
} from '../../../helpers/h2-frames.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 150);

const OPTIONS = {
  headerTableSize: 4096,
  maxConcurrentStreams: null,
  initialWindowSize: 65535,
  connectionWindowSize: 65535,
  maxHeaderListSize: 16384,
  maxHeadersCount: 100,
  streamErrorOnInvalidMessaging: false,
  limits: DEFAULT_FLOOD_LIMITS,
};

/** Streams whose request body is held (paused) by the handler until the test resumes them. */
const paused = new Map<number, ServerStream>();
let errors = 0;
let trailerOverflows = 0;

/** Answers each request with `x-size` bytes once its body ended; `x-pause` pauses its reading. */
function serve(socket: net.Socket): void {
  const events: SessionEvents = {
    onRequest(stream, request, endStream) {
      const size = Number(request.headers[request.headers.indexOf('x-size') + 1] ?? 0) || 0;
      const answer = () => {
        stream.respond(200, ['content-type', 'text/plain'], size === 0);
        if (size > 0) {
          stream.write(Buffer.alloc(size, 'a'));
          stream.end();
        }
      };
      stream.handler = {
        onData() {},
        onEnd: answer,
        onClose() {},
        onDrain() {},
      };
      if (request.headers.includes('x-pause')) {
        stream.pause();
        paused.set(stream.id, stream);
      }
      if (endStream) answer();
    },
    onMalformed() {},
    onMessagingError() {},
    onHeaderOverflow(stream) {
      stream.respond(431, [], true);
    },
    onTrailerOverflow() {
      trailerOverflows += 1;
    },
    onConnectionError() {
      errors += 1;
    },
    onClose() {},
  };
  new ServerSession(socket, OPTIONS, events);
}

let server: net.Server;
let port: number;
before(async () => {
  server = net.createServer(serve);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as net.AddressInfo).port;
});
after(() => server.close());

const GET: Array<[string, string]> = [
  [':method', 'GET'],
  [':scheme', 'http'],
  [':path', '/'],
  [':authority', 'a.test'],
];

const dataBytes = (frames: Frame[], id: number) =>
  frames.filter((f) => f.type === FRAME.DATA && f.streamId === id).reduce((n, f) => n + f.payload.length, 0);

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

test('response DATA never goes beyond the peer window; each WINDOW_UPDATE lets that much more out', async (t) => {
  const h2 = await rawH2(port);
  t.after(() => h2.socket.destroy());
  // SETTINGS_INITIAL_WINDOW_SIZE 10.
  h2.send(frame(FRAME.SETTINGS, 0, 0, Buffer.from([0, 4, 0, 0, 0, 10])));
  h2.send(headersFrame(1, [...GET, ['x-size', '100']], true));
  await h2.until((f) => dataBytes(f, 1) >= 10, 3000);
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(dataBytes(h2.frames(), 1), 10);
  h2.send(frame(FRAME.WINDOW_UPDATE, 0, 1, u32(40)));
  await h2.until((f) => dataBytes(f, 1) >= 50, 3000);
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(dataBytes(h2.frames(), 1), 50);
  h2.send(frame(FRAME.WINDOW_UPDATE, 0, 1, u32(50)));
  const frames = await h2.until(
    (f) => f.some((x) => x.type === FRAME.DATA && x.flags & FLAG.END_STREAM),
    3000,
  );
  assert.equal(dataBytes(frames, 1), 100);
  h2.socket.destroy();
});

test("a paused reader's stream window is not given back until it resumes; the connection's is", async (t) => {
  const h2 = await rawH2(port);
  t.after(() => h2.socket.destroy());
  h2.send(headersFrame(1, [[':method', 'POST'], ...GET.slice(1), ['x-pause', '1']], false));
  const chunk = Buffer.alloc(16000, 'b');
  for (let i = 0; i < 4; i++) h2.send(frame(FRAME.DATA, 0, 1, chunk));
  const updates = (f: Frame[], id: number) =>
    f.filter((x) => x.type === FRAME.WINDOW_UPDATE && x.streamId === id);
  await h2.until((f) => updates(f, 0).length > 0, 3000);
  await new Promise((r) => setTimeout(r, 100));
  assert.ok(updates(h2.frames(), 0).length > 0, 'the connection window comes back');
  assert.equal(updates(h2.frames(), 1).length, 0, 'the stream window does not');
  paused.get(1)?.resume();
  const frames = await h2.until((f) => updates(f, 1).length > 0, 3000);
  h2.socket.destroy();
  // Given back in halves of the window: 48000 once three of the four chunks were read.
  assert.equal(updates(frames, 1)[0]?.payload.readUInt32BE(0), 48000);
});

/** A frame of any type (known or not), flags and length, on a few stream ids. */
const anyFrame = fc
  .tuple(
    fc.integer({ min: 0, max: 11 }),
    fc.integer({ min: 0, max: 255 }),
    fc.constantFrom(0, 1, 2, 3, 5, 7, 0x7fffffff),
    fc.oneof(
      fc.uint8Array({ maxLength: 24 }),
      fc.constant(new Uint8Array([0x82, 0x86, 0x84, 0x41, 0x01, 0x61])),
      fc.constant(new Uint8Array([0, 0, 0, 1])),
    ),
  )
  .map(([type, flags, id, payload]) => frame(type, flags, id, Buffer.from(payload)));

test('random frames after the preface end in answers or a GOAWAY, never an exception', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(anyFrame, { maxLength: 12 }), fc.boolean(), async (frames, split) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.on('error', () => {});
      const received: Buffer[] = [];
      socket.on('data', (c: Buffer) => received.push(c));
      await new Promise((r) => socket.once('connect', r));
      const bytes = Buffer.concat([PREFACE, frame(FRAME.SETTINGS, 0, 0), ...frames]);
      // Split, every frame boundary is also a read boundary somewhere.
      if (split) for (let i = 0; i < bytes.length; i += 7) socket.write(bytes.subarray(i, i + 7));
      else socket.write(bytes);
      await new Promise((r) => setTimeout(r, 20));
      socket.destroy();
      for (const f of parseFrames(Buffer.concat(received))) {
        assert.ok(f.type <= FRAME.WINDOW_UPDATE + 1, `a frame type we send: ${f.type}`);
        assert.ok(f.payload.length <= 16384);
      }
    }),
    { seed: 41, numRuns: RUNS },
  );
  assert.ok(errors > 0, 'some runs were connection errors');
});

/**
 * Root cause: the HPACK decoder appended every field of a block before the header list limit
 * was checked, so a 200 KB block naming a 4 KB `cookie` entry by one byte, 200,000 times,
 * decoded to 800 MB of fields; joining the cookies threw `RangeError: Invalid string length`
 * out of the socket's data handler, which ended the whole proxy (`--concurrency 2` too). As
 * trailers, no limit applied at all: 1.8 s of CPU, and the fields went on to the upstream.
 */
test('a header block naming a 4 KB entry 200,000 times: 431, as trailers a reset; the next stream is served', async (t) => {
  const h2 = await rawH2(port);
  t.after(() => h2.socket.destroy());
  const literal = (name: string, value: string) =>
    Buffer.concat([
      Buffer.from([0x40, name.length]),
      Buffer.from(name),
      Buffer.from([0x7f]),
      length(value.length - 127),
      Buffer.from(value),
    ]);
  // 0x40: literal with incremental indexing, then 0xbe (index 62, the entry just added) repeated.
  const bomb = (name: string) =>
    Buffer.concat([literal(name, 'a'.repeat(4000)), Buffer.alloc(200_000, 0xbe)]);
  const sendBlock = (id: number, block: Buffer) => {
    for (let at = 0; at < block.length; at += 16384) {
      const flags = (at === 0 ? FLAG.END_STREAM : 0) | (at + 16384 >= block.length ? FLAG.END_HEADERS : 0);
      h2.send(
        frame(at === 0 ? FRAME.HEADERS : FRAME.CONTINUATION, flags, id, block.subarray(at, at + 16384)),
      );
    }
  };
  sendBlock(1, Buffer.concat([headerBlock(GET), bomb('cookie')]));
  const frames = await h2.until((f) => f.some((x) => x.streamId === 1 && x.type === FRAME.HEADERS), 5000);
  const status = frames.find((x) => x.streamId === 1 && x.type === FRAME.HEADERS);
  assert.ok(status, 'the request is answered');
  assert.equal(status.payload.subarray(status.payload.length - 3).toString(), '431');

  const before = trailerOverflows;
  h2.send(headersFrame(3, [[':method', 'POST'], ...GET.slice(1), ['x-pause', '1']], false));
  sendBlock(3, bomb('x-trailer'));
  const reset = await h2.until((f) => f.some((x) => x.streamId === 3 && x.type === FRAME.RST_STREAM), 5000);
  assert.equal(
    reset.find((x) => x.streamId === 3 && x.type === FRAME.RST_STREAM)?.payload.readUInt32BE(0),
    2,
  );
  assert.equal(trailerOverflows, before + 1);

  h2.send(headersFrame(5, [...GET, ['x-size', '3']], true));
  const next = await h2.until((f) => f.some((x) => x.streamId === 5 && x.type === FRAME.DATA), 5000);
  assert.equal(dataBytes(next, 5), 3);
  assert.ok(!next.some((x) => x.type === FRAME.GOAWAY), 'the connection goes on');
});

/** The continuation bytes of an HPACK integer (RFC 7541 5.1) past its prefix. */
function length(rest: number): Buffer {
  const out: number[] = [];
  while (rest >= 128) {
    out.push((rest % 128) + 128);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
  return Buffer.from(out);
}
