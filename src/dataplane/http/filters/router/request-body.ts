import type { UpstreamRequest } from '../../../pool/types.js';

/**
 * A request body on its way upstream: the pieces wait here until a try's upstream is ready,
 * and stay for another try while the whole body fits the cluster's
 * `per_connection_buffer_limit_bytes`; past it they are dropped once sent, and the request
 * can no longer be retried.
 */
export class RequestBody {
  private chunks: Buffer[] = [];
  private bytes = 0;
  /** How many of `chunks` the current try's upstream has. */
  private sent = 0;
  /** Every byte so far is still here for another try. */
  kept = true;

  constructor(private readonly limit: number) {}

  /**
   * Takes a piece; `writing`: the caller writes it to a ready upstream itself. True when the
   * sender should stop: more than the limit waits for an upstream.
   */
  add(chunk: Buffer, writing: boolean): boolean {
    this.bytes += chunk.length;
    if (!writing || this.kept) this.chunks.push(chunk);
    if (writing) this.sent = this.chunks.length;
    if (this.bytes <= this.limit) return false;
    this.kept = false;
    if (writing) this.release();
    return !writing;
  }

  /** A new try: its upstream has nothing yet. */
  rewind(): void {
    this.sent = 0;
  }

  /** Writes what `up` has not had; true when the pieces are gone (not kept), so reading may resume. */
  flush(up: UpstreamRequest): boolean {
    const chunks = this.chunks;
    for (let i = this.sent; i < chunks.length; i++) up.write(chunks[i] as Buffer);
    this.sent = chunks.length;
    if (this.kept) return false;
    this.release();
    return true;
  }

  private release(): void {
    this.chunks = [];
    this.sent = 0;
  }
}
