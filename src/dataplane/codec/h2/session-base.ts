import type * as net from 'node:net';
import { guardedData } from '../peer-guard.js';
import { readInto } from '../socket-reads.js';
import type { CodecEvents, SessionOptions } from './connection.js';
import {
  DEFAULT_MAX_FRAME,
  DEFAULT_WINDOW,
  ERROR,
  FLAG,
  FrameWriter,
  MAX_WINDOW,
  SETTING,
  TYPE,
} from './frames.js';
import { HpackDecoder, HpackEncoder } from './hpack.js';
import { FrameReader } from './inbound.js';
import { FloodCounter, type FloodKind } from './limits.js';
import { writeGoaway, writeHeaderBlock, writeSettings } from './output.js';
import { type BaseStream, CLOSED, ClosedStreams, RESET_BY_US, type StreamOwner } from './stream.js';

/** Socket bytes queued beyond this stop DATA frames until it drains. */
const SOCKET_HIGH_WATER = 256 * 1024;
/** How long a session that sent a final GOAWAY waits for the peer to read it before destroying the socket. */
const CLOSE_GRACE_MS = 1000;

/**
 * Sessions with output to flush at the end of this event loop turn, each once (`flushQueued`):
 * an array, as a Set's iterator and its table's growth were garbage in every turn.
 */
const dirty: BaseSession[] = [];
let flushScheduled = false;
function flushAll(): void {
  flushScheduled = false;
  // Sessions marked while this runs are flushed by it too: the loop reads the length each time.
  for (let i = 0; i < dirty.length; i++) {
    const session = dirty[i] as BaseSession;
    if (session.flushQueued) session.flush();
  }
  dirty.length = 0;
}

/**
 * An HTTP/2 connection (RFC 9113) on a socket, either role: frames in through the reader,
 * DATA out under the peer's flow-control windows, batched into one write per event loop
 * turn. Errors of the peer end its stream (RST_STREAM) or the connection (GOAWAY, then
 * close). What a server or a client does with header blocks and its own ends is its own.
 */
export abstract class BaseSession implements StreamOwner {
  readonly streams = new Map<number, BaseStream>();
  /** Our recent resets and closes, for frames that arrive on streams gone. */
  readonly gone = new ClosedStreams();
  readonly writer = new FrameWriter();
  readonly decoder: HpackDecoder;
  readonly encoder = new HpackEncoder();
  readonly flood: FloodCounter;
  readonly reader: FrameReader;
  /** The highest stream the peer opened (a client's peer opens none: push is off). */
  lastPeerStreamId = 0;
  /** Our GOAWAY's last stream: streams above it are ignored. */
  goAwayLastId = MAX_WINDOW;
  settingsAcked = false;
  peerMaxFrame = DEFAULT_MAX_FRAME;
  peerInitialWindow = DEFAULT_WINDOW;
  /** The peer's SETTINGS_MAX_CONCURRENT_STREAMS: how many streams we may open (unlimited until it says). */
  peerMaxStreams = Number.POSITIVE_INFINITY;
  sendWindow = DEFAULT_WINDOW;
  /** Connection-level bytes received and not announced back yet. */
  private recvUnacked = 0;
  /** Streams with DATA (or their end) to send, in the order they asked, each once (`readyQueued`). */
  private readonly ready_: BaseStream[] = [];
  /** In `dirty`, to be flushed at the end of the turn. */
  flushQueued = false;
  /** Frames (and control frames) handed to the socket whose write has not completed. */
  private inFlightFrames = 0;
  private inFlightControl = 0;
  protected closing = false;
  /** The socket is gone or a connection error was sent: input is ignored. */
  dead = false;
  private closeTimer: NodeJS.Timeout | null = null;

  constructor(
    readonly socket: net.Socket,
    readonly options: SessionOptions,
    readonly events: CodecEvents,
    /** A server reads the client preface first; a client sends it. */
    expectPreface: boolean,
  ) {
    this.decoder = new HpackDecoder(options.headerTableSize);
    this.flood = new FloodCounter(options.limits);
    this.reader = new FrameReader(this, expectPreface);
    // Plain sockets read into the thread's shared buffer (the reader copies what it keeps).
    if (readInto(socket, (chunk) => this.onRead(chunk))) socket.resume();
    else
      socket.on(
        'data',
        guardedData(socket, 'http2 read', (chunk) => this.onData(chunk)),
      );
    socket.on('drain', () => this.markDirty());
    socket.on('error', () => {});
    socket.on('close', () => this.onSocketClose());
  }

  get closed(): boolean {
    return this.closing || this.dead;
  }

  /** Our SETTINGS (with `extra` for the role) and the connection window beyond the default. */
  protected sendSettings(extra: ReadonlyArray<[number, number]>): void {
    const o = this.options;
    const settings: Array<[number, number]> = [[SETTING.MAX_HEADER_LIST_SIZE, o.maxHeaderListSize], ...extra];
    if (o.headerTableSize !== 4096) settings.push([SETTING.HEADER_TABLE_SIZE, o.headerTableSize]);
    if (o.maxConcurrentStreams !== null)
      settings.push([SETTING.MAX_CONCURRENT_STREAMS, o.maxConcurrentStreams]);
    if (o.initialWindowSize !== DEFAULT_WINDOW)
      settings.push([SETTING.INITIAL_WINDOW_SIZE, o.initialWindowSize]);
    writeSettings(this.writer, settings);
    if (o.connectionWindowSize > DEFAULT_WINDOW)
      this.writer.u32Frame(TYPE.WINDOW_UPDATE, 0, o.connectionWindowSize - DEFAULT_WINDOW);
    this.markDirty();
  }

  private onRead(chunk: Buffer): boolean {
    this.onData(chunk);
    return true;
  }

  /** Bytes from the socket. */
  onData(chunk: Buffer): void {
    if (this.dead) return;
    this.reader.push(chunk);
    this.flush();
  }

  // ---- roles ----

  /** A stream id is idle (never opened), so a frame on it is a connection error (RFC 9113 5.1). */
  abstract idle(id: number): boolean;
  /** A header block on an open stream (`overflow`: over the header list limits). */
  abstract streamBlock(stream: BaseStream, fields: string[], end: boolean, overflow: boolean): void;
  /** A header block opening a stream the peer may not have used before. */
  abstract newStreamBlock(id: number, fields: string[], end: boolean, overflow: boolean): void;
  /** Our END_STREAM went out. */
  protected abstract localDone(stream: BaseStream): void;
  abstract ended(stream: BaseStream): void;
  /** The peer's GOAWAY: no new streams; its last stream id and error code. */
  abstract peerGoAway(lastStreamId: number, code: number): void;

  /** The peer's RST_STREAM. */
  peerReset(stream: BaseStream, code: number): void {
    this.closeStream(stream, code, CLOSED);
  }

  // ---- output ----

  markDirty(): void {
    if (this.dead) return;
    if (!this.flushQueued) {
      this.flushQueued = true;
      dirty.push(this);
    }
    if (!flushScheduled) {
      flushScheduled = true;
      setImmediate(flushAll);
    }
  }

  /** Counts a frame about to be queued; false (and the connection ended) when that is a flood. */
  queued(control: boolean): boolean {
    const flood = this.flood.frameQueued(control);
    if (flood === null) return true;
    this.connectionError(ERROR.ENHANCE_YOUR_CALM, flood);
    return false;
  }

  /** Writes what is queued, DATA first as the windows and the socket allow. */
  flush(): void {
    this.flushQueued = false;
    if (this.ready_.length > 0 && !this.dead) this.sendData();
    const out = this.writer.take();
    if (this.streams.size === 0) this.writer.release();
    if (out === null) return;
    const socket = this.socket;
    if (socket.destroyed) return;
    const frames = this.flood.outboundFrames - this.inFlightFrames;
    const control = this.flood.outboundControlFrames - this.inFlightControl;
    this.inFlightFrames += frames;
    this.inFlightControl += control;
    const written = () => {
      this.inFlightFrames -= frames;
      this.inFlightControl -= control;
      this.flood.written(frames, control);
    };
    if (out.length === 1) socket.write(out[0] as Buffer, written);
    else {
      socket.cork();
      for (let i = 0; i < out.length - 1; i++) socket.write(out[i] as Buffer);
      socket.write(out[out.length - 1] as Buffer, written);
      socket.uncork();
    }
  }

  /**
   * DATA of the ready streams in turn; a stream the windows stop keeps its place, and one that
   * asks again while this runs (a drained writer writing more) is visited again at the end.
   */
  private sendData(): void {
    const ready = this.ready_;
    let kept = 0;
    let i = 0;
    for (; i < ready.length; i++) {
      if (this.socket.writableLength > SOCKET_HIGH_WATER) break;
      const stream = ready[i] as BaseStream;
      if (stream.closed) {
        stream.readyQueued = false;
        continue;
      }
      while (stream.outBytes > 0 && this.sendWindow > 0 && stream.sendWindow > 0 && !this.dead)
        this.dataFrame(stream);
      if (this.dead) return;
      if (stream.outBytes === 0) {
        stream.readyQueued = false;
        if (stream.localEnded && !stream.endSent) this.endStream(stream);
      } else ready[kept++] = stream;
      stream.sent();
      if (this.dead) return;
    }
    // Those the socket's backlog held back keep their turn.
    while (i < ready.length) ready[kept++] = ready[i++] as BaseStream;
    ready.length = kept;
  }

  /** One DATA frame of the stream's queue, as large as the windows and the frame size allow. */
  private dataFrame(stream: BaseStream): void {
    if (!this.queued(false)) return;
    const n = Math.min(stream.outBytes, this.sendWindow, stream.sendWindow, this.peerMaxFrame);
    const last = n === stream.outBytes && stream.localEnded && stream.trailers === null;
    this.writer.header(n, TYPE.DATA, last ? FLAG.END_STREAM : 0, stream.id);
    let left = n;
    while (left > 0) {
      const first = stream.out[0] as Buffer;
      const take = Math.min(left, first.length - stream.outOffset);
      this.writer.bytes(first, stream.outOffset, stream.outOffset + take);
      left -= take;
      stream.outOffset += take;
      if (stream.outOffset === first.length) {
        stream.out.shift();
        stream.outOffset = 0;
      }
    }
    stream.outBytes -= n;
    stream.sendWindow -= n;
    this.sendWindow -= n;
    this.flood.outboundDataFrames += 1;
    if (last) {
      stream.endSent = true;
      this.localDone(stream);
    }
  }

  /** The stream's end once its DATA is out: trailers, or an empty DATA frame with END_STREAM. */
  private endStream(stream: BaseStream): void {
    if (!this.queued(false)) return;
    if (stream.trailers !== null) this.headersFrame(stream.id, null, stream.trailers, true);
    else this.writer.header(0, TYPE.DATA, FLAG.END_STREAM, stream.id);
    stream.endSent = true;
    this.localDone(stream);
  }

  /**
   * A header block; `status` is a response's (null: the pseudo-fields, if any, lead `headers`),
   * `contentLength` (0 or more) its `content-length` in place of any in `headers`.
   */
  protected headersFrame(
    id: number,
    status: string | null,
    headers: readonly string[],
    end: boolean,
    contentLength = -1,
  ): void {
    writeHeaderBlock(this.writer, this.encoder, this.peerMaxFrame, id, status, headers, end, contentLength);
  }

  // ---- StreamOwner ----

  ready(stream: BaseStream): void {
    if (this.dead) return;
    if (!stream.readyQueued) {
      stream.readyQueued = true;
      this.ready_.push(stream);
    }
    this.markDirty();
  }

  reset(stream: BaseStream, code: number): void {
    if (stream.closed) return;
    this.resetId(stream.id, code);
    this.closeStream(stream, code, RESET_BY_US);
  }

  /** Sends RST_STREAM for a stream that may have no object (refused, or gone). */
  resetId(id: number, code: number): void {
    if (this.dead || !this.queued(true)) return;
    this.writer.u32Frame(TYPE.RST_STREAM, id, code);
    this.gone.remember(id, RESET_BY_US);
    this.markDirty();
  }

  consumed(stream: BaseStream, n: number): void {
    stream.recvUnacked += n;
    // Announced in halves of the window: one WINDOW_UPDATE per half a window read, not per frame.
    if (stream.remoteClosed || stream.recvUnacked < this.options.initialWindowSize / 2) return;
    this.windowUpdate(stream.id, stream.recvUnacked);
    stream.recvWindow += stream.recvUnacked;
    stream.recvUnacked = 0;
  }

  /** The connection received `n` bytes of DATA; they are announced back in halves of its window. */
  connectionConsumed(n: number): void {
    this.recvUnacked += n;
    if (this.recvUnacked < this.options.connectionWindowSize / 2) return;
    this.windowUpdate(0, this.recvUnacked);
    this.reader.recvWindow += this.recvUnacked;
    this.recvUnacked = 0;
  }

  private windowUpdate(id: number, n: number): void {
    if (this.dead || !this.queued(false)) return;
    this.writer.u32Frame(TYPE.WINDOW_UPDATE, id, n);
    this.markDirty();
  }

  // ---- streams ----

  closeStream(stream: BaseStream, code: number, how: number): void {
    if (stream.closed) return;
    // A closed stream still in `ready_` is dropped at the next flush.
    this.streams.delete(stream.id);
    this.gone.remember(stream.id, how);
    stream.close(code);
    if (this.closing && this.streams.size === 0) this.end();
  }

  // ---- connection end ----

  /**
   * GOAWAY without closing: `lastStreamId` the highest stream still served (2^31-1 first, so
   * streams already on their way are served, as RFC 9113 6.8 advises for a graceful close).
   */
  goaway(code: number, lastStreamId: number): void {
    if (this.dead) return;
    this.goAwayLastId = Math.min(this.goAwayLastId, lastStreamId);
    writeGoaway(this.writer, lastStreamId, code);
    this.markDirty();
  }

  /** Graceful close: GOAWAY naming the last stream received; the socket ends when the open streams are done. */
  close(): void {
    if (this.closing || this.dead) return;
    this.goaway(ERROR.NO_ERROR, this.lastPeerStreamId);
    this.closing = true;
    if (this.streams.size === 0) this.end();
  }

  /** A connection error (RFC 9113 5.4.1): GOAWAY with its code, streams closed, then the socket closed. */
  connectionError(code: number, flood: FloodKind | null = null): void {
    if (this.dead) return;
    // What was queued may never be read (a flood): only the GOAWAY is sent.
    this.writer.take();
    this.ready_.length = 0;
    this.goaway(code, this.lastPeerStreamId);
    this.dead = true;
    this.events.onConnectionError(code, flood);
    this.closeAll(code);
    this.end();
  }

  protected end(): void {
    this.dead = true;
    this.flushQueued = false;
    this.flush();
    const socket = this.socket;
    if (socket.destroyed) return;
    socket.end();
    this.closeTimer = setTimeout(() => socket.destroy(), CLOSE_GRACE_MS).unref();
  }

  protected closeAll(code: number): void {
    for (const stream of [...this.streams.values()]) this.closeStream(stream, code, CLOSED);
  }

  private onSocketClose(): void {
    this.dead = true;
    this.flushQueued = false;
    if (this.closeTimer) clearTimeout(this.closeTimer);
    this.closeAll(ERROR.CANCEL);
    this.events.onClose();
  }
}
