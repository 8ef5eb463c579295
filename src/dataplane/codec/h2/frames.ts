/** HTTP/2 frame types, flags, error codes and settings (RFC 9113 6, 7, 11). */
export const TYPE = {
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

export const FLAG = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4, PADDED: 0x8, PRIORITY: 0x20 } as const;

export const ERROR = {
  NO_ERROR: 0,
  PROTOCOL_ERROR: 1,
  INTERNAL_ERROR: 2,
  FLOW_CONTROL_ERROR: 3,
  SETTINGS_TIMEOUT: 4,
  STREAM_CLOSED: 5,
  FRAME_SIZE_ERROR: 6,
  REFUSED_STREAM: 7,
  CANCEL: 8,
  COMPRESSION_ERROR: 9,
  CONNECT_ERROR: 10,
  ENHANCE_YOUR_CALM: 11,
  INADEQUATE_SECURITY: 12,
  HTTP_1_1_REQUIRED: 13,
} as const;

export const SETTING = {
  HEADER_TABLE_SIZE: 1,
  ENABLE_PUSH: 2,
  MAX_CONCURRENT_STREAMS: 3,
  INITIAL_WINDOW_SIZE: 4,
  MAX_FRAME_SIZE: 5,
  MAX_HEADER_LIST_SIZE: 6,
} as const;

export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
export const FRAME_HEADER = 9;
export const DEFAULT_WINDOW = 65535;
export const DEFAULT_MAX_FRAME = 16384;
export const MAX_WINDOW = 2 ** 31 - 1;

/** Payloads up to this size are copied into the output block; larger ones are written as they are. */
const COPY_MAX = 2048;
const BLOCK = 16 * 1024;
const NO_BLOCK = Buffer.alloc(0);

/**
 * The bytes a session has to send, serialized in place: frames are written into a block that
 * is handed out region by region (a region once taken is never written again), and large
 * payloads go beside it uncopied. `take` returns what to write since the last call.
 */
export class FrameWriter {
  /** Empty until the first frame, and again once an idle session let it go. */
  private block = NO_BLOCK;
  /** The start of the block's region not taken yet, and the write position. */
  private start = 0;
  pos = 0;
  private out: Buffer[] = [];
  /** Bytes waiting, for the caller's backpressure. */
  pending = 0;

  /** Makes room for `n` contiguous bytes at `pos`; returns the block to write them in. */
  reserve(n: number): Buffer {
    if (this.block.length - this.pos < n) {
      this.seal();
      this.block = Buffer.allocUnsafe(Math.max(BLOCK, n));
      this.start = 0;
      this.pos = 0;
    }
    return this.block;
  }

  private seal(): void {
    if (this.pos > this.start) this.out.push(this.block.subarray(this.start, this.pos));
    this.start = this.pos;
  }

  header(length: number, type: number, flags: number, streamId: number): void {
    const b = this.reserve(FRAME_HEADER);
    const at = this.pos;
    b[at] = length >>> 16;
    b[at + 1] = (length >>> 8) & 0xff;
    b[at + 2] = length & 0xff;
    b[at + 3] = type;
    b[at + 4] = flags;
    b.writeUInt32BE(streamId, at + 5);
    this.pos = at + FRAME_HEADER;
    this.pending += FRAME_HEADER;
  }

  /** A frame whose payload is one 32-bit value (WINDOW_UPDATE, RST_STREAM). */
  u32Frame(type: number, streamId: number, value: number): void {
    this.reserve(FRAME_HEADER + 4);
    this.header(4, type, 0, streamId);
    this.block.writeUInt32BE(value, this.pos);
    this.pos += 4;
    this.pending += 4;
  }

  bytes(payload: Uint8Array, from: number, to: number): void {
    const n = to - from;
    if (n <= COPY_MAX) {
      const b = this.reserve(n);
      b.set(payload.subarray(from, to), this.pos);
      this.pos += n;
    } else {
      this.seal();
      this.out.push(Buffer.from(payload.buffer, payload.byteOffset + from, n));
    }
    this.pending += n;
  }

  /** Accounts bytes the caller wrote into `reserve`'s block itself. */
  advance(n: number): void {
    this.pos += n;
    this.pending += n;
  }

  /**
   * Lets the block go (its written regions live on in their writes): a session with no open
   * stream holds no output memory between requests.
   */
  release(): void {
    this.seal();
    this.block = NO_BLOCK;
    this.start = 0;
    this.pos = 0;
  }

  take(): Buffer[] | null {
    this.seal();
    if (this.out.length === 0) return null;
    const out = this.out;
    this.out = [];
    this.pending = 0;
    return out;
  }
}
