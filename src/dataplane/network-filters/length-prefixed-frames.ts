/**
 * The framing the watched database protocols share (mysql_proxy, postgres_proxy): a fixed-size
 * header that says how long the body after it is. Bytes come in chunks cut anywhere, so the
 * reader carries a header or a body across chunks; of each body it keeps only the first bytes
 * its protocol asks for, skipping the rest unread, as a watcher needs no more.
 */

export interface FrameFormat {
  /** How many bytes the header holds. */
  headerLength: number;
  /** The body's length from a whole header, or -1 when the header makes the stream unreadable. */
  bodyLength(header: Buffer): number;
  /** How many of the body's first bytes to hand over (at most its length). */
  keep(header: Buffer, bodyLength: number): number;
  /** One whole frame: its header, the kept bytes, the body's full length. False stops reading. */
  onFrame(header: Buffer, kept: Buffer, bodyLength: number): boolean;
}

const NOTHING = Buffer.alloc(0);

export class LengthPrefixedFrames {
  private readonly header: Buffer;
  private headerFilled = 0;
  /** Whether the bytes coming are a body's (after a whole header). */
  private inBody = false;
  private bodyLength = 0;
  private remaining = 0;
  private kept: Buffer = NOTHING;
  private keptFilled = 0;

  constructor(private readonly format: FrameFormat) {
    this.header = Buffer.alloc(format.headerLength);
  }

  /** False once the stream stopped being readable (a header it refused, or `onFrame` said stop). */
  feed(chunk: Buffer): boolean {
    let at = 0;
    while (at < chunk.length) {
      if (!this.inBody) {
        const take = Math.min(this.header.length - this.headerFilled, chunk.length - at);
        chunk.copy(this.header, this.headerFilled, at, at + take);
        this.headerFilled += take;
        at += take;
        if (this.headerFilled < this.header.length) return true;
        this.headerFilled = 0;
        this.bodyLength = this.format.bodyLength(this.header);
        if (this.bodyLength < 0) return false;
        this.remaining = this.bodyLength;
        const keep = Math.min(this.format.keep(this.header, this.bodyLength), this.bodyLength);
        this.kept = keep > 0 ? Buffer.alloc(keep) : NOTHING;
        this.keptFilled = 0;
        this.inBody = true;
        if (this.remaining === 0 && !this.finish()) return false;
        continue;
      }
      const take = Math.min(this.remaining, chunk.length - at);
      const copy = Math.min(take, this.kept.length - this.keptFilled);
      if (copy > 0) this.keptFilled += chunk.copy(this.kept, this.keptFilled, at, at + copy);
      this.remaining -= take;
      at += take;
      if (this.remaining === 0 && !this.finish()) return false;
    }
    return true;
  }

  private finish(): boolean {
    this.inBody = false;
    const kept = this.kept;
    this.kept = NOTHING;
    return this.format.onFrame(this.header, kept, this.bodyLength);
  }
}
