/**
 * HTTP/2 frames written and read by hand, for tests that send what no HTTP/2 library would
 * (a `host` beside `:authority`, DATA longer than its content-length, floods): header blocks
 * are HPACK literals without indexing or Huffman coding, so any byte can go in a field.
 */
import type * as net from 'node:net';
import { rawClient } from '../dataplane/http/hostile-clients.js';

export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

export const FRAME = {
  DATA: 0,
  HEADERS: 1,
  PRIORITY: 2,
  RST_STREAM: 3,
  SETTINGS: 4,
  PUSH_PROMISE: 5,
  PING: 6,
  GOAWAY: 7,
  WINDOW_UPDATE: 8,
  CONTINUATION: 9,
} as const;

export const FLAG = { END_STREAM: 1, ACK: 1, END_HEADERS: 4 } as const;

export function frame(
  type: number,
  flags: number,
  streamId: number,
  payload: Buffer = Buffer.alloc(0),
): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId, 5);
  return Buffer.concat([head, payload]);
}

/** An HPACK length prefix (RFC 7541 5.1) with `bits` bits in the first byte. */
function integer(value: number, bits: number, first: number): Buffer {
  const max = (1 << bits) - 1;
  if (value < max) return Buffer.from([first | value]);
  const out = [first | max];
  let rest = value - max;
  while (rest >= 128) {
    out.push((rest % 128) + 128);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
  return Buffer.from(out);
}

/** A header block of literal fields without indexing (RFC 7541 6.2.2), names and values as latin1. */
export function headerBlock(fields: Array<[string, string]>): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of fields) {
    const n = Buffer.from(name, 'latin1');
    const v = Buffer.from(value, 'latin1');
    parts.push(Buffer.from([0]), integer(n.length, 7, 0), n, integer(v.length, 7, 0), v);
  }
  return Buffer.concat(parts);
}

export function headersFrame(streamId: number, fields: Array<[string, string]>, endStream: boolean): Buffer {
  return frame(
    FRAME.HEADERS,
    FLAG.END_HEADERS | (endStream ? FLAG.END_STREAM : 0),
    streamId,
    headerBlock(fields),
  );
}

export interface Frame {
  type: number;
  flags: number;
  streamId: number;
  payload: Buffer;
}

/** The frames in `bytes` (after the server's preface, which is frames too); a torn tail is left out. */
export function parseFrames(bytes: Buffer): Frame[] {
  const frames: Frame[] = [];
  let at = 0;
  while (at + 9 <= bytes.length) {
    const length = bytes.readUIntBE(at, 3);
    if (at + 9 + length > bytes.length) break;
    frames.push({
      type: bytes[at + 3] as number,
      flags: bytes[at + 4] as number,
      streamId: bytes.readUInt32BE(at + 5) & 0x7fffffff,
      payload: bytes.subarray(at + 9, at + 9 + length),
    });
    at += 9 + length;
  }
  return frames;
}

/** A raw HTTP/2 connection: what it sent is written at once; `frames()` is everything received so far. */
export interface RawH2 {
  socket: net.Socket;
  send(bytes: Buffer): void;
  frames(): Frame[];
  /** Resolves true once the proxy closed the connection (within `ms`), false if it is still open. */
  closed(ms: number): Promise<boolean>;
  /** Waits until `check` holds on the frames received, at most `ms`. */
  until(check: (frames: Frame[]) => boolean, ms: number): Promise<Frame[]>;
}

/** Connects, sends the preface and an empty SETTINGS frame, and acknowledges the server's. */
export async function rawH2(port: number): Promise<RawH2> {
  const client = await rawClient(port);
  const { socket } = client;
  const received = () => parseFrames(client.received());
  let acked = false;
  socket.on('data', () => {
    if (!acked && received().some((f) => f.type === FRAME.SETTINGS && (f.flags & FLAG.ACK) === 0)) {
      acked = true;
      socket.write(frame(FRAME.SETTINGS, FLAG.ACK, 0));
    }
  });
  socket.write(Buffer.concat([PREFACE, frame(FRAME.SETTINGS, 0, 0)]));
  return {
    socket,
    send: (bytes) => {
      if (!socket.destroyed) socket.write(bytes);
    },
    frames: received,
    closed: (ms) => client.closed(ms),
    async until(check, ms) {
      const deadline = performance.now() + ms;
      // Each wait ends at the next bytes (or the close): the frames are checked again then.
      while (!check(received()) && !socket.destroyed && socket.readable) {
        const left = deadline - performance.now();
        if (left <= 0) break;
        await client.waitBytes(client.received().length + 1, left);
      }
      return received();
    },
  };
}

/** How the proxy answered stream `id`: its response HEADERS, a RST_STREAM code, or a GOAWAY code. */
export function outcome(frames: Frame[], id: number): string {
  for (const f of frames) {
    if (f.streamId === id && f.type === FRAME.HEADERS) return 'response';
    if (f.streamId === id && f.type === FRAME.RST_STREAM) return `RST_STREAM ${f.payload.readUInt32BE(0)}`;
    if (f.type === FRAME.GOAWAY) return `GOAWAY ${f.payload.readUInt32BE(4)}`;
  }
  return 'nothing';
}
