/**
 * HTTP/1 body framing (RFC 9112 6): a body delimited by Content-Length, chunked, or read until
 * the connection closes, decoded as bytes arrive; shared by the downstream codec, the
 * upstream pool and the health probes.
 */

import type { ResponseHead } from './h1-head.js';
import { bodilessStatus } from './h1-status.js';

/** Framing of a message body. */
export const Framing = { None: 0, Length: 1, Chunked: 2, UntilClose: 3 } as const;
export type Framing = (typeof Framing)[keyof typeof Framing];

/** How the body of response `head` to a `method` request is delimited (RFC 9112 6.3). */
export function responseFraming(head: ResponseHead, method: string): Framing {
  if (method === 'HEAD' || bodilessStatus(head.status)) return Framing.None;
  if (head.chunked) return Framing.Chunked;
  return head.contentLength >= 0 ? Framing.Length : Framing.UntilClose;
}

/** `chunk-size [BWS ; chunk-ext]`. */
const SIZE_LINE = /^([0-9a-fA-F]{1,15})[ \t]*(?:;|$)/;
/** A trailer field line: a token and a colon. */
const TRAILER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+:/;

/** No control byte but HTAB: RFC 9112 7.1 has none in a chunk line. */
function plain(line: string): boolean {
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i);
    if ((c < 32 && c !== 9) || c === 127) return false;
  }
  return true;
}

/**
 * An incremental body framer. `feed` returns how many bytes of `buf` from `off` belong to
 * the body, calling `onData` with decoded slices; `done` turns true at the end of the body.
 * `error` is set on a malformed chunked encoding.
 */
export class BodyFramer {
  done = false;
  error = false;
  framing: Framing = Framing.None;
  private remaining = 0;
  /** Chunked states: 0 size line, 1 data, 2 CRLF after data, 3 trailers. */
  private state = 0;
  private line = '';

  constructor(framing: Framing, length: number) {
    this.reset(framing, length);
  }

  /** Ready for another body: a connection frames each of its messages with one framer. */
  reset(framing: Framing, length: number): this {
    this.framing = framing;
    this.remaining = length;
    this.state = 0;
    this.line = '';
    this.error = false;
    this.done = framing === Framing.None || (framing === Framing.Length && length === 0);
    return this;
  }

  feed(buf: Buffer, off: number, onData: (chunk: Buffer) => void): number {
    if (this.done) return 0;
    if (this.framing === Framing.UntilClose) {
      if (off < buf.length) onData(off === 0 ? buf : buf.subarray(off));
      return buf.length - off;
    }
    if (this.framing === Framing.Length) {
      const take = Math.min(this.remaining, buf.length - off);
      if (take > 0) onData(off === 0 && take === buf.length ? buf : buf.subarray(off, off + take));
      this.remaining -= take;
      if (this.remaining === 0) this.done = true;
      return take;
    }
    return this.feedChunked(buf, off, onData);
  }

  private feedChunked(buf: Buffer, start: number, onData: (chunk: Buffer) => void): number {
    let off = start;
    while (off < buf.length && !this.done) {
      if (this.state === 1) {
        const take = Math.min(this.remaining, buf.length - off);
        onData(buf.subarray(off, off + take));
        off += take;
        this.remaining -= take;
        if (this.remaining === 0) this.state = 2;
        continue;
      }
      const nl = buf.indexOf(10, off);
      const end = nl < 0 ? buf.length : nl + 1;
      this.line += buf.toString('latin1', off, end);
      off = end;
      if (nl < 0) {
        if (this.line.length > 4096) this.error = this.done = true;
        break;
      }
      // The line without its LF and the CR before it (a bare LF ends a line too, as in heads).
      const full = this.line;
      const line = full.slice(0, full.charCodeAt(full.length - 2) === 13 ? -2 : -1);
      this.line = '';
      // Each line is held to RFC 9112 7.1 as the reference, nginx and HAProxy read it: a
      // lenient reading (a blank-looking line ending the trailers) would end the body where a
      // peer before or after this one does not.
      let ok: boolean;
      if (this.state === 0) {
        const m = SIZE_LINE.exec(line);
        ok = m !== null && plain(line);
        if (m) {
          this.remaining = Number.parseInt(m[1] as string, 16);
          this.state = this.remaining === 0 ? 3 : 1;
        }
      } else if (this.state === 2) {
        ok = line === '';
        this.state = 0;
      } else {
        ok = line === '' || (TRAILER_NAME.test(line) && plain(line));
        if (line === '') this.done = true;
      }
      if (!ok) {
        this.error = this.done = true;
        break;
      }
    }
    return off - start;
  }
}
