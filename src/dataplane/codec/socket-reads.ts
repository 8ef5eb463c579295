import type * as net from 'node:net';
import type * as tls from 'node:tls';
import { peerFault } from './peer-guard.js';

/**
 * Where accepted plain sockets read into: one read at a time on this thread, and whatever a
 * reader keeps of it is copied before its call returns.
 */
const readBuffer = Buffer.allocUnsafe(64 * 1024);

/**
 * Views of a read buffer, the one of the last read's length kept for the next: a view is
 * valid during its read only, so a read as long as the one before (the usual keep-alive
 * request or response) can be handed the same one, and a Buffer view is about 100 B made per
 * read otherwise.
 */
export class ReadViews {
  private view: Buffer;

  constructor(readonly buffer: Buffer) {
    this.view = buffer.subarray(0, 0);
  }

  /** `buffer`'s first `n` bytes. */
  of(n: number): Buffer {
    if (this.view.length !== n) this.view = this.buffer.subarray(0, n);
    return this.view;
  }
}

const views = new ReadViews(readBuffer);

/** The socket's slots for Node's `onread` option (its own symbols), found on the first socket. */
let slots: { buffer: symbol; callback: symbol } | null | undefined;

function slotsOf(socket: net.Socket): { buffer: symbol; callback: symbol } | null {
  if (slots === undefined) {
    const own = Object.getOwnPropertySymbols(socket);
    const buffer = own.find((s) => s.description === 'kBuffer');
    const callback = own.find((s) => s.description === 'kBufferCb');
    slots = buffer && callback ? { buffer, callback } : null;
  }
  return slots;
}

/**
 * Gives what an accepted plain TCP socket receives to `onRead` as a view of one buffer that
 * every such socket of this thread reads into: what Node's `onread` option does for a socket
 * it connects (`net.connect({ onread })`, the upstream pools), which an accepted socket cannot
 * be given. Each read then skips the Buffer Node allocates for it (64 KB, shrunk after) and the
 * `Readable` around the socket (`push`, `data`): about 6 µs of CPU a read in a ping-pong of
 * one socket (bench/README.md). The view is valid during the call only; `onRead` returns false
 * to stop reading. End, errors, `pause` and `resume` go on as before (Node's own `onread`
 * path). False, and the socket left as it was, for a TLS socket, one with bytes already
 * waiting in its buffer or held by a read filter, or a Node without these slots. A throw from
 * `onRead` destroys this socket only (`peerFault`): the read runs straight from libuv, where an
 * uncaught throw would end the process.
 */
export function readInto(socket: net.Socket, onRead: (chunk: Buffer) => boolean): boolean {
  const handle = (socket as { _handle?: { useUserBuffer?: (buf: Uint8Array) => void } | null })._handle;
  if ((socket as tls.TLSSocket).encrypted || typeof handle?.useUserBuffer !== 'function') return false;
  // Bytes waiting in the socket's buffer, or a read filter holding them (`hold-reads.ts`
  // takes them at `push`), keep the `data` path.
  if (socket.readableLength > 0 || Object.hasOwn(socket, 'push')) return false;
  const s = slotsOf(socket);
  const own = socket as unknown as Record<symbol, unknown>;
  if (!s || own[s.buffer]) return false;
  handle.useUserBuffer(readBuffer);
  own[s.buffer] = readBuffer;
  own[s.callback] = (n: number) => {
    try {
      return onRead(views.of(n));
    } catch (err) {
      peerFault(err, 'socket read', socket);
      return false;
    }
  };
  return true;
}

/** `chunk`, or a copy of it when it is a view of the read buffer: for bytes kept past the read. */
export function owned(chunk: Buffer): Buffer {
  return chunk.buffer === readBuffer.buffer ? Buffer.from(chunk) : chunk;
}

/** Replaces the views of the read buffer among `chunks` with copies. */
export function ownViews(chunks: Buffer[]): void {
  for (let i = 0; i < chunks.length; i++) chunks[i] = owned(chunks[i] as Buffer);
}
