import { CONTINUE, type DataStatus, STOP_ITERATION_AND_BUFFER, type StreamFilter } from './api.js';
import type { FilterChainEnds } from './chain-ends.js';
import { Direction, holdAt, joined } from './direction.js';
import { FilterHandle, type HandleHost } from './filter-handle.js';

/**
 * One request's stream filters (src/dataplane/http/filters/api.ts) and where each direction
 * stands among them. Headers, body pieces and trailers go through in order: a piece reaches the
 * filter holding the headers (which sees it) and waits there, or waits at a filter that holds
 * data, until that filter continues. Built only for a chain that has stream filters.
 */
export class FilterRunner implements HandleHost {
  private readonly handles: FilterHandle[];
  private readonly dec: Direction;
  private readonly enc: Direction;
  /** The response head while the encoders have it. */
  status = 0;
  private headers: string[] = [];
  /** True while the encoders see one of the proxy's own replies. */
  localReply = false;

  constructor(
    private readonly filters: StreamFilter[],
    readonly ends: FilterChainEnds,
  ) {
    const n = filters.length;
    this.handles = filters.map((_f, i) => new FilterHandle(this, i));
    this.dec = new Direction(true, n);
    this.enc = new Direction(false, n);
  }

  decodeHeaders(): void {
    this.dec.started = true;
    this.runHeaders(this.dec, 0);
  }

  decodeData(chunk: Buffer, end: boolean): void {
    this.runData(this.dec, 0, chunk, end);
  }

  decodeTrailers(trailers: string[]): void {
    this.runTrailers(this.dec, 0, trailers);
  }

  encodeHeaders(status: number, headers: string[]): void {
    this.status = status;
    this.headers = headers;
    this.enc.started = true;
    this.runHeaders(this.enc, 0);
  }

  encodeData(chunk: Buffer, end: boolean): void {
    this.runData(this.enc, 0, chunk, end);
  }

  encodeTrailers(trailers: string[]): void {
    this.runTrailers(this.enc, 0, trailers);
  }

  /**
   * The head of one of the proxy's own replies: every encoder sees it, none can hold it. It
   * replaces any response the encoders had: what they held of it is dropped, and a filter
   * continuing it afterwards continues nothing.
   */
  encodeLocalHeaders(status: number, headers: string[]): void {
    this.enc.reset();
    this.localReply = true;
    const filters = this.filters;
    for (let i = filters.length - 1; i >= 0; i--)
      filters[i]?.encodeHeaders?.(status, headers, this.handles[i] as FilterHandle);
  }

  /**
   * The body of one of the proxy's own replies, in one piece: every encoder sees it and none can
   * hold it, but one that rewrites bodies returns its bytes (a compressor's whole stream), which
   * go on in its place. Returns the body to send.
   */
  encodeLocalData(body: Buffer): Buffer {
    const filters = this.filters;
    let out = body;
    for (let i = filters.length - 1; i >= 0; i--) {
      const next = filters[i]?.encodeData?.(this.handles[i] as FilterHandle, out, true);
      if (Buffer.isBuffer(next)) out = next;
    }
    return out;
  }

  /** The request is over, however it ended. */
  destroy(): void {
    for (const f of this.filters) f.onDestroy?.();
  }

  /** Resumes `d` after its filter `k` (this direction's order). */
  continueAt(decode: boolean, index: number): void {
    const d = decode ? this.dec : this.enc;
    const k = decode ? index : this.filters.length - 1 - index;
    if (this.ends.ended || !d.started) return;
    if (d.at === k) {
      this.runHeaders(d, k + 1);
      if (this.ends.ended) return;
    } else if (d.at < k) return; // the headers have not reached it: nothing of it to continue
    const hold = d.holds[k];
    if (hold === undefined) return;
    d.holds[k] = undefined;
    this.release(d, hold.bytes);
    if (hold.chunks.length > 0 || hold.end) this.runData(d, k + 1, joined(hold), hold.end);
    if (!this.ends.ended && hold.trailers !== null) this.runTrailers(d, k + 1, hold.trailers);
  }

  /** What filter `index` (chain order) holds of one direction, in one piece; null when nothing. */
  buffered(decode: boolean, index: number): Buffer | null {
    const hold = decode ? this.dec.holds[index] : this.enc.holds[this.filters.length - 1 - index];
    return hold === undefined || hold.chunks.length === 0 ? null : joined(hold);
  }

  replaceBuffered(decode: boolean, index: number, bytes: Buffer): void {
    const d = decode ? this.dec : this.enc;
    const hold = holdAt(d, decode ? index : this.filters.length - 1 - index);
    this.release(d, hold.bytes);
    hold.chunks = bytes.length === 0 ? [] : [bytes];
    hold.bytes = bytes.length;
    d.held += bytes.length;
  }

  private filterOf(d: Direction, i: number): StreamFilter {
    return this.filters[d.decode ? i : this.filters.length - 1 - i] as StreamFilter;
  }

  private handleOf(d: Direction, i: number): FilterHandle {
    return this.handles[d.decode ? i : this.filters.length - 1 - i] as FilterHandle;
  }

  private runHeaders(d: Direction, from: number): void {
    const n = this.filters.length;
    for (let i = from; i < n; i++) {
      d.at = i;
      const f = this.filterOf(d, i);
      const h = this.handleOf(d, i);
      const status = d.decode
        ? f.decodeHeaders(h)
        : (f.encodeHeaders?.(this.status, this.headers, h) ?? CONTINUE);
      // Answered, or the filter already continued from inside its callback.
      if (this.ends.ended || d.at !== i || status !== CONTINUE) return;
    }
    d.at = n;
    if (d.decode) this.ends.router.decodeHeaders();
    else this.ends.encodedHeaders(this.status, this.headers);
  }

  private runData(d: Direction, from: number, chunk: Buffer, end: boolean): void {
    if (this.ends.ended) return;
    const n = this.filters.length;
    for (let i = from; i < n; i++) {
      // Data never passes a filter holding the headers (d.at), but that filter sees it.
      if (i > d.at) return;
      const f = this.filterOf(d, i);
      const h = this.handleOf(d, i);
      let status: DataStatus =
        (d.decode ? f.decodeData?.(h, chunk, end) : f.encodeData?.(h, chunk, end)) ?? CONTINUE;
      if (this.ends.ended) return;
      if (typeof status !== 'number') {
        chunk = status;
        status = CONTINUE;
      }
      const hold = d.holds[i];
      if (status === CONTINUE && i !== d.at) {
        if (hold !== undefined) {
          d.holds[i] = undefined;
          this.release(d, hold.bytes);
          hold.chunks.push(chunk);
          chunk = joined(hold);
        }
        continue;
      }
      this.hold(d, i, chunk, end, status === STOP_ITERATION_AND_BUFFER);
      return;
    }
    if (d.decode) this.ends.router.decodeData(chunk, end);
    else this.ends.encodedData(chunk, end);
  }

  private runTrailers(d: Direction, from: number, trailers: string[]): void {
    if (this.ends.ended) return;
    const n = this.filters.length;
    for (let i = from; i < n; i++) {
      if (i > d.at) return;
      const f = this.filterOf(d, i);
      const h = this.handleOf(d, i);
      let status: DataStatus =
        (d.decode ? f.decodeTrailers?.(h, trailers) : f.encodeTrailers?.(h, trailers)) ?? CONTINUE;
      if (this.ends.ended) return;
      if (typeof status !== 'number') {
        // The body's last bytes, ahead of the trailers: held with them, or sent on now.
        if (i === d.at || d.holds[i] !== undefined) this.hold(d, i, status, false, false);
        else this.runData(d, i + 1, status, false);
        if (this.ends.ended) return;
        status = CONTINUE;
      }
      if (status !== CONTINUE || i === d.at || d.holds[i] !== undefined) {
        holdAt(d, i).trailers = trailers;
        return;
      }
    }
    if (d.decode) this.ends.router.decodeTrailers(trailers);
    else this.ends.encodedTrailers(trailers);
  }

  private hold(d: Direction, i: number, chunk: Buffer, end: boolean, buffering: boolean): void {
    const hold = holdAt(d, i);
    if (chunk.length > 0) hold.chunks.push(chunk);
    hold.bytes += chunk.length;
    hold.end = end;
    d.held += chunk.length;
    const limit = this.ends.bufferLimit;
    if (buffering && hold.bytes > limit) {
      if (d.decode) this.ends.decodeTooLarge();
      else this.ends.encodeTooLarge();
    } else if (d.held > limit) {
      // Asked again on every piece: the exchange's own flow control may have resumed the sender.
      if (d.decode) this.ends.decodeWatermark(true);
      else this.ends.encodeWatermark(true);
    }
  }

  private release(d: Direction, bytes: number): void {
    const limit = this.ends.bufferLimit;
    const wasAbove = d.held > limit;
    d.held -= bytes;
    if (!wasAbove || d.held > limit) return;
    if (d.decode) this.ends.decodeWatermark(false);
    else this.ends.encodeWatermark(false);
  }
}
