import { owned } from '../socket-reads.js';
import type { Connection } from './connection.js';
import { ping, priority, rstStream, settings, windowUpdate } from './control.js';
import { messagingError, remoteEnd } from './ends.js';
import { DEFAULT_MAX_FRAME, ERROR, FLAG, FRAME_HEADER, PREFACE, TYPE } from './frames.js';
import { HpackError } from './hpack.js';
import { Keepalive } from './keepalive.js';

/** A header block larger than this (HEADERS and its CONTINUATIONs) ends the connection. */
const MAX_BLOCK = 256 * 1024;
/**
 * A header block in more CONTINUATION frames than this ends the connection: a block of
 * MAX_BLOCK fits in 16 at the smallest frame size, and a flood of tiny ones (CVE-2024-27983's
 * class) costs a frame's work each before the byte cap would see it.
 */
const MAX_CONTINUATIONS = 64;

/**
 * Reads a session's input: the client preface (a server's), then frames, each handled as RFC 9113 says
 * (section 6 per type, 5.1 per stream state, 5.4 for errors). A frame whole in one socket
 * chunk is read in place; one split across chunks is gathered into a buffer of its size.
 * Nothing of a chunk outlives `push` but copies: it may be the thread's read buffer
 * (`socket-reads.ts`).
 */
export class FrameReader {
  /** Preface bytes matched so far; -1 once it is complete and the first SETTINGS came. */
  private prefaceAt = 0;
  private sawSettings = false;
  /** A frame split across chunks: its bytes so far, and how many it needs. */
  private partial: Buffer | null = null;
  private partialFill = 0;
  /** A header block waiting for CONTINUATION: its stream, flags and fragments. */
  private blockStream = 0;
  private blockEndStream = false;
  private block: Buffer | null = null;
  private blockLength = 0;
  private blockFrames = 0;
  /** How much DATA the peer may still send on the connection. */
  recvWindow: number;
  /**
   * `connection_keepalive`'s PINGs, held by the reader: every frame read moves their deadline,
   * and their ACK ends the wait. Null without one.
   */
  readonly keepalive: Keepalive | null;

  constructor(
    private readonly s: Connection,
    expectPreface: boolean,
  ) {
    this.recvWindow = s.options.connectionWindowSize;
    this.keepalive = s.options.keepalive ? new Keepalive(s.options.keepalive, s) : null;
    if (!expectPreface) this.prefaceAt = -1;
  }

  push(chunk: Buffer): void {
    let at = 0;
    if (this.prefaceAt >= 0) {
      at = this.preface(chunk);
      if (at < 0) return;
    }
    if (this.partial !== null) {
      at = this.fillPartial(chunk, at);
      if (at < 0) return;
    }
    const end = chunk.length;
    while (at < end && !this.s.dead) {
      if (end - at < FRAME_HEADER) {
        this.startPartial(chunk, at, FRAME_HEADER);
        return;
      }
      const length =
        (chunk[at] as number) * 65536 + (chunk[at + 1] as number) * 256 + (chunk[at + 2] as number);
      if (length > DEFAULT_MAX_FRAME) {
        this.s.connectionError(ERROR.FRAME_SIZE_ERROR);
        return;
      }
      if (end - at < FRAME_HEADER + length) {
        this.startPartial(chunk, at, FRAME_HEADER + length);
        return;
      }
      this.frame(chunk, at, length);
      at += FRAME_HEADER + length;
    }
  }

  /** Matches the client preface; returns where frames start, or -1 (more needed, or a wrong preface). */
  private preface(chunk: Buffer): number {
    const n = Math.min(PREFACE.length - this.prefaceAt, chunk.length);
    if (chunk.compare(PREFACE, this.prefaceAt, this.prefaceAt + n, 0, n) !== 0) {
      this.s.connectionError(ERROR.PROTOCOL_ERROR);
      return -1;
    }
    this.prefaceAt += n;
    if (this.prefaceAt < PREFACE.length) return -1;
    this.prefaceAt = -1;
    return n;
  }

  private startPartial(chunk: Buffer, at: number, need: number): void {
    this.partial = Buffer.allocUnsafe(need);
    this.partialFill = chunk.copy(this.partial, 0, at);
  }

  /** Adds to the split frame; returns where the chunk's next frame starts, or -1 when all of it was used. */
  private fillPartial(chunk: Buffer, at: number): number {
    let partial = this.partial as Buffer;
    const taken = chunk.copy(partial, this.partialFill, at);
    this.partialFill += taken;
    at += taken;
    if (this.partialFill < partial.length) return -1;
    if (partial.length === FRAME_HEADER) {
      // The header is whole: now the frame's size is known.
      const length = partial.readUIntBE(0, 3);
      if (length > DEFAULT_MAX_FRAME) {
        this.s.connectionError(ERROR.FRAME_SIZE_ERROR);
        return -1;
      }
      if (length > 0) {
        const whole = Buffer.allocUnsafe(FRAME_HEADER + length);
        partial.copy(whole);
        this.partial = whole;
        return this.fillPartial(chunk, at);
      }
    }
    this.partial = null;
    partial = partial as Buffer;
    this.frame(partial, 0, partial.length - FRAME_HEADER);
    return this.s.dead ? -1 : at;
  }

  private frame(b: Buffer, at: number, length: number): void {
    const type = b[at + 3] as number;
    const flags = b[at + 4] as number;
    const id = b.readUInt32BE(at + 5) & 0x7fffffff;
    const p = at + FRAME_HEADER;
    this.keepalive?.read();
    const s = this.s;
    if (!this.sawSettings) {
      if (type !== TYPE.SETTINGS || (flags & FLAG.ACK) !== 0) {
        s.connectionError(ERROR.PROTOCOL_ERROR);
        return;
      }
      this.sawSettings = true;
    }
    // RFC 9113 6.10: nothing may come between a header block's frames.
    if (this.block !== null && (type !== TYPE.CONTINUATION || id !== this.blockStream)) {
      s.connectionError(ERROR.PROTOCOL_ERROR);
      return;
    }
    switch (type) {
      case TYPE.DATA:
        this.data(b, p, length, flags, id);
        return;
      case TYPE.HEADERS:
        this.headers(b, p, length, flags, id);
        return;
      case TYPE.PRIORITY:
        priority(s, b, p, length, id);
        return;
      case TYPE.RST_STREAM:
        rstStream(s, b, p, length, id);
        return;
      case TYPE.SETTINGS:
        settings(s, b, p, length, flags, id);
        return;
      case TYPE.PUSH_PROMISE:
        s.connectionError(ERROR.PROTOCOL_ERROR);
        return;
      case TYPE.PING:
        ping(s, b, p, length, flags, id, this.keepalive);
        return;
      case TYPE.GOAWAY:
        if (id !== 0) {
          s.connectionError(ERROR.PROTOCOL_ERROR);
          return;
        }
        if (length < 8) {
          s.connectionError(ERROR.FRAME_SIZE_ERROR);
          return;
        }
        s.peerGoAway(b.readUInt32BE(p) & 0x7fffffff, b.readUInt32BE(p + 4));
        return;
      case TYPE.WINDOW_UPDATE:
        windowUpdate(s, b, p, length, id);
        return;
      case TYPE.CONTINUATION:
        this.continuation(b, p, length, flags, id);
        return;
      default:
      // RFC 9113 5.5: unknown frame types are ignored.
    }
  }

  /** DATA on a stream not open: ignored after our reset (RFC 9113 5.4.2), else a connection error. */
  private dataOnGone(id: number): void {
    const s = this.s;
    if (s.idle(id)) s.connectionError(ERROR.PROTOCOL_ERROR);
    else if (!s.gone.resetByUs(id)) s.connectionError(ERROR.STREAM_CLOSED);
  }

  /**
   * The payload's end without its padding (it starts at `p + 1` when PADDED, else at `p`), or
   * -1 after a connection error. One number, not a pair: this runs for every DATA and HEADERS frame.
   */
  private unpaddedEnd(b: Buffer, p: number, length: number, flags: number): number {
    if ((flags & FLAG.PADDED) === 0) return p + length;
    const pad = length > 0 ? (b[p] as number) : 0;
    if (length === 0 || pad >= length) {
      this.s.connectionError(ERROR.PROTOCOL_ERROR);
      return -1;
    }
    return p + length - pad;
  }

  private data(b: Buffer, p: number, length: number, flags: number, id: number): void {
    const s = this.s;
    if (id === 0) {
      s.connectionError(ERROR.PROTOCOL_ERROR);
      return;
    }
    const to = this.unpaddedEnd(b, p, length, flags);
    if (to < 0) return;
    const from = (flags & FLAG.PADDED) === 0 ? p : p + 1;
    if (length > this.recvWindow) {
      s.connectionError(ERROR.FLOW_CONTROL_ERROR);
      return;
    }
    this.recvWindow -= length;
    // The connection's window comes back as DATA arrives; each stream's only as its reader consumes.
    s.connectionConsumed(length);
    const end = (flags & FLAG.END_STREAM) !== 0;
    const flood = s.flood.payload(length === 0 && !end);
    if (flood !== null) {
      s.connectionError(ERROR.ENHANCE_YOUR_CALM, flood);
      return;
    }
    const stream = s.streams.get(id);
    if (stream === undefined) {
      this.dataOnGone(id);
      return;
    }
    if (stream.remoteClosed) {
      s.connectionError(ERROR.STREAM_CLOSED);
      return;
    }
    if (length > stream.recvWindow) {
      s.reset(stream, ERROR.FLOW_CONTROL_ERROR);
      return;
    }
    stream.recvWindow -= length;
    // Padding is consumed as it arrives.
    if (to - from < length) s.consumed(stream, length - (to - from));
    stream.received += to - from;
    if (stream.contentLength >= 0 && stream.received > stream.contentLength) {
      messagingError(this.s, stream, true);
      return;
    }
    // A view of the socket's read buffer is copied: the stream's user may keep it.
    if (to > from) stream.deliver(owned(b.subarray(from, to)));
    if (end && !stream.closed) remoteEnd(this.s, stream, null);
  }

  private headers(b: Buffer, p: number, length: number, flags: number, id: number): void {
    const s = this.s;
    if (id === 0 || id % 2 === 0) {
      s.connectionError(ERROR.PROTOCOL_ERROR);
      return;
    }
    const to = this.unpaddedEnd(b, p, length, flags);
    if (to < 0) return;
    let from = (flags & FLAG.PADDED) === 0 ? p : p + 1;
    if (flags & FLAG.PRIORITY) {
      if (to - from < 5) {
        s.connectionError(ERROR.FRAME_SIZE_ERROR);
        return;
      }
      const dependency = b.readUInt32BE(from) & 0x7fffffff;
      from += 5;
      // RFC 9113 5.3.1: a stream cannot depend on itself.
      if (dependency === id) {
        this.refuse(id, ERROR.PROTOCOL_ERROR, b, from, to, flags);
        return;
      }
    }
    const end = (flags & FLAG.END_STREAM) !== 0;
    const flood = s.flood.payload(length === 0 && !end);
    if (flood !== null) {
      s.connectionError(ERROR.ENHANCE_YOUR_CALM, flood);
      return;
    }
    if (flags & FLAG.END_HEADERS) {
      this.headerBlock(id, end, b, from, to);
      return;
    }
    this.blockStream = id;
    this.blockEndStream = end;
    this.block = Buffer.allocUnsafe(Math.max(4096, (to - from) * 2));
    this.blockLength = b.copy(this.block, 0, from, to);
    this.blockFrames = 0;
  }

  private continuation(b: Buffer, p: number, length: number, flags: number, id: number): void {
    const s = this.s;
    if (this.block === null) {
      s.connectionError(ERROR.PROTOCOL_ERROR);
      return;
    }
    const flood = s.flood.payload(length === 0 && (flags & FLAG.END_HEADERS) === 0);
    if (flood !== null) {
      s.connectionError(ERROR.ENHANCE_YOUR_CALM, flood);
      return;
    }
    const need = this.blockLength + length;
    this.blockFrames += 1;
    if (need > MAX_BLOCK || this.blockFrames > MAX_CONTINUATIONS) {
      s.connectionError(ERROR.ENHANCE_YOUR_CALM);
      return;
    }
    if (need > this.block.length) {
      const grown = Buffer.allocUnsafe(Math.min(MAX_BLOCK, need * 2));
      this.block.copy(grown, 0, 0, this.blockLength);
      this.block = grown;
    }
    this.blockLength += b.copy(this.block, this.blockLength, p, p + length);
    if ((flags & FLAG.END_HEADERS) === 0) return;
    const block = this.block;
    this.block = null;
    this.headerBlock(id, this.blockEndStream, block, 0, this.blockLength);
  }

  /**
   * Decodes a whole header block (always: the table it shares with the peer must stay in step),
   * keeping its fields up to `keep` bytes of header list.
   */
  private decode(block: Buffer, from: number, to: number, keep: number): string[] | null {
    const fields: string[] = [];
    try {
      this.s.decoder.decode(block, from, to, fields, keep);
    } catch (err) {
      if (!(err instanceof HpackError)) throw err;
      this.s.connectionError(ERROR.COMPRESSION_ERROR);
      return null;
    }
    return fields;
  }

  /** Decodes a header block only to keep the table in step, and resets its stream with `code`. */
  private refuse(id: number, code: number, b: Buffer, from: number, to: number, flags: number): void {
    if ((flags & FLAG.END_HEADERS) === 0) {
      this.s.connectionError(ERROR.PROTOCOL_ERROR);
      return;
    }
    if (this.decode(b, from, to, 0) !== null) this.s.resetId(id, code);
  }

  private headerBlock(id: number, end: boolean, block: Buffer, from: number, to: number): void {
    const s = this.s;
    const fields = this.decode(block, from, to, s.options.maxHeaderListSize);
    if (fields === null) return;
    // Judged before anything reads the fields: past the limit the list holds only its start.
    const overflow =
      s.decoder.listSize > s.options.maxHeaderListSize || fields.length / 2 > s.options.maxHeadersCount;
    const open = s.streams.get(id);
    if (open !== undefined) s.streamBlock(open, fields, end, overflow);
    else if (s.idle(id)) s.newStreamBlock(id, fields, end, overflow);
    // A stream gone: ignored after our reset; else a stream that was used (STREAM_CLOSED) or never was.
    else if (!s.gone.resetByUs(id))
      s.connectionError(s.gone.wasClosed(id) ? ERROR.STREAM_CLOSED : ERROR.PROTOCOL_ERROR);
  }
}
