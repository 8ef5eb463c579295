/**
 * HTTP/1.1 message heads (RFC 9110, RFC 9112), parsed for the downstream codec, the upstream
 * pool and the health probes (what a parsed head holds: `h1-head.ts`; its fields and the
 * framing they ask for: `h1-fields.ts`; body framing: `h1-body.ts`). One incremental scanner
 * checks request and response heads byte by byte as they arrive and keeps its state between
 * chunks: a head dripped one byte at a time costs linear time, and the size and count limits
 * hold before a head is complete. The rules and why they were chosen: docs/reliability.md,
 * "HTTP/1 parsing rules".
 */

import { Framing, readFields, SeenFields } from './h1-fields.js';
import {
  type H1Limits,
  type HeadError,
  REQUEST_LIMITS,
  RESPONSE_LIMITS,
  type RequestHead,
  type ResponseHead,
} from './h1-head.js';

// Byte classes: tchar (RFC 9110 5.6.2), VCHAR, obs-text, OWS, DIGIT, and Host characters.
const TCHAR = 1;
const VCHAR = 2;
const OBS = 4;
const WS = 8;
const DIGIT = 16;
const HOST = 32;
const FIELD = VCHAR | OBS | WS;
const CLASS = new Uint8Array(256);
function mark(chars: string, bit: number): void {
  for (const c of Buffer.from(chars, 'latin1')) CLASS[c] = (CLASS[c] as number) | bit;
}
for (let c = 0x21; c <= 0x7e; c++) CLASS[c] = VCHAR;
for (let c = 0x80; c <= 0xff; c++) CLASS[c] = OBS;
const ALNUM = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
mark(`!#$%&'*+-.^_\`|~${ALNUM}`, TCHAR);
mark('0123456789', DIGIT);
mark(` \t`, WS);
// uri-host [":" port]: unreserved, pct-encoded, sub-delims, and IP-literal brackets (RFC 3986).
mark(`-._~%!$&'()*+,;=:[]${ALNUM}`, HOST);
const CR = 13;
const LF = 10;
const SP = 32;
const COLON = 58;

// Scanner states.
const LEAD = 0; // empty lines before the start line (RFC 9112 2.2)
const LEAD_CR = 1;
const PART1 = 2; // method / response version
const PART2 = 3; // request target / status code
const PART3 = 4; // request version / reason phrase
const LINE_CR = 5; // a CR ending a line: LF must follow
const LINE_START = 6; // a header line or the blank line
const NAME = 7;
const VALUE = 8; // from the colon to the line end
const END_CR = 9; // a CR on the blank line

/**
 * The scanner both directions share: it checks every byte against the grammar, records where
 * the start line's parts and each field's name and value are, and copies a head it has to
 * wait for into its own buffer (grown by doubling), so nothing is rescanned or recopied.
 */
abstract class HeadScanner<H> {
  /** Set when a head is refused; framing is lost after that, so the scanner stays failed. */
  error: HeadError | null = null;
  /** Bytes the last `feed` consumed. */
  used = 0;
  private state = LEAD;
  /** Head bytes consumed before the current `feed`. */
  private len = 0;
  private acc: Buffer | null = null;
  private count = 0;
  /** Start and end of the start line's three parts. */
  private readonly start = new Int32Array(6);
  /** Name start, name end, value start, value end of each field. */
  private pos: Int32Array = new Int32Array(4 * 32);
  /** The framing of the head being built, read into the head before the next. */
  protected readonly framing = new Framing();
  /** The fields of the head before, whose strings a head repeating them reuses. */
  protected readonly seen = new SeenFields();
  private readonly part1: number;
  private readonly part2: number;
  private readonly part3: number;

  constructor(
    readonly limits: H1Limits,
    private readonly request: boolean,
  ) {
    this.part1 = request ? TCHAR : VCHAR;
    this.part2 = request ? VCHAR : DIGIT;
    this.part3 = request ? VCHAR : VCHAR | OBS | WS;
  }

  /**
   * Consumes head bytes of `buf` from `off` (`used` tells how many) and returns the head once
   * it is complete; null while more bytes are needed or when the head is refused (`error`).
   * After a head the scanner is ready for the next one.
   */
  feed(buf: Buffer, off: number): H | null {
    this.used = 0;
    if (this.error) return null;
    const end = Math.min(buf.length, off + this.limits.maxHeadBytes - this.len);
    const next = this.scan(buf, off, end);
    if (this.error) return null;
    if (next < 0) {
      this.used = end - off;
      if (end < buf.length) return this.fail(431, 'head too large');
      this.keep(buf, off, end);
      return null;
    }
    this.used = next - off;
    let text: string;
    if (this.len === 0) text = buf.toString('latin1', off, next);
    else {
      this.keep(buf, off, next);
      text = (this.acc as Buffer).toString('latin1', 0, this.len);
      // A long dripped head should not pin its buffer for the connection's life.
      if (this.len > 4096) this.acc = null;
    }
    const count = this.count;
    this.state = LEAD;
    this.len = 0;
    this.count = 0;
    return this.build(text, this.start, this.pos, count);
  }

  /** The typed head from the head's text and the recorded positions, or null after `fail`. */
  protected abstract build(text: string, start: Int32Array, pos: Int32Array, count: number): H | null;

  protected fail(status: number, reason: string): null {
    this.error = { status: this.request ? status : 502, reason };
    return null;
  }

  private keep(buf: Buffer, from: number, to: number): void {
    const need = this.len + to - from;
    let acc = this.acc;
    if (!acc || acc.length < need) {
      const size = Math.min(Math.max(need, 2 * (acc?.length ?? 256)), this.limits.maxHeadBytes);
      const grown = Buffer.allocUnsafe(size);
      if (acc) acc.copy(grown, 0, 0, this.len);
      this.acc = acc = grown;
    }
    buf.copy(acc, this.len, from, to);
    this.len = need;
  }

  /** Scans `buf[from, end)`: the index after the head's blank line, or -1 (more needed, or `error`). */
  private scan(buf: Buffer, from: number, end: number): number {
    // Positions are recorded relative to the head's first byte. Runs of ordinary bytes are
    // skipped in tight loops; the switch only sees the bytes that end them.
    const delta = this.len - from;
    const table = CLASS;
    const start = this.start;
    let pos = this.pos;
    let state = this.state;
    let count = this.count;
    let i = from;
    scan: while (i < end) {
      switch (state) {
        case LEAD: {
          const c = buf[i] as number;
          if (c === LF) break;
          if (c === CR) {
            state = LEAD_CR;
            break;
          }
          start[0] = i + delta;
          state = PART1;
          continue scan;
        }
        case LEAD_CR:
          if (buf[i] !== LF) return this.stop(400, 'bare CR');
          state = LEAD;
          break;
        case PART1: {
          const m = this.part1;
          while ((table[buf[i] as number] as number) & m) if (++i === end) break scan;
          if (buf[i] !== SP || i + delta === start[0]) return this.stop(400, 'bad start line');
          start[1] = i + delta;
          start[2] = i + delta + 1;
          state = PART2;
          break;
        }
        case PART2: {
          const m = this.part2;
          while ((table[buf[i] as number] as number) & m) if (++i === end) break scan;
          const c = buf[i] as number;
          if (c === SP && i + delta > (start[2] as number)) {
            start[3] = i + delta;
            start[4] = i + delta + 1;
            state = PART3;
            break;
          }
          if (!this.request && (c === CR || c === LF)) {
            // A status line without a reason phrase.
            start[3] = start[4] = start[5] = i + delta;
            state = c === CR ? LINE_CR : LINE_START;
            break;
          }
          return this.stop(400, c > 0x7e ? 'non-ASCII byte in request target' : 'bad start line');
        }
        case PART3: {
          const m = this.part3;
          while ((table[buf[i] as number] as number) & m) if (++i === end) break scan;
          const c = buf[i] as number;
          if (c !== CR && c !== LF) return this.stop(400, 'bad start line');
          start[5] = i + delta;
          state = c === CR ? LINE_CR : LINE_START;
          break;
        }
        case LINE_CR:
          if (buf[i] !== LF) return this.stop(400, 'bare CR');
          state = LINE_START;
          break;
        case LINE_START: {
          const c = buf[i] as number;
          if (c === CR) {
            state = END_CR;
            break;
          }
          if (c === LF) return this.done(i + 1, count);
          const cls = table[c] as number;
          if (!(cls & TCHAR)) return this.stop(400, cls & WS ? 'obsolete line folding' : 'bad header name');
          if (count === this.limits.maxHeadersCount) return this.stop(431, 'too many headers');
          if (4 * count === pos.length) pos = this.grow();
          pos[4 * count] = i + delta;
          state = NAME;
          continue scan;
        }
        case NAME:
          while ((table[buf[i] as number] as number) & TCHAR) if (++i === end) break scan;
          if (buf[i] !== COLON) return this.stop(400, 'bad header name');
          pos[4 * count + 1] = i + delta;
          pos[4 * count + 2] = i + delta + 1;
          state = VALUE;
          break;
        case VALUE: {
          // OWS around the value is trimmed when the head is built.
          while ((table[buf[i] as number] as number) & FIELD) if (++i === end) break scan;
          const c = buf[i] as number;
          if (c !== CR && c !== LF) {
            return this.stop(400, c === 0 ? 'NUL in header value' : 'control byte in header value');
          }
          pos[4 * count + 3] = i + delta;
          count += 1;
          state = c === CR ? LINE_CR : LINE_START;
          break;
        }
        default:
          // END_CR
          if (buf[i] !== LF) return this.stop(400, 'bare CR');
          return this.done(i + 1, count);
      }
      i++;
    }
    this.state = state;
    this.count = count;
    return -1;
  }

  /** Room for more fields: grown on demand, as a large `maxHeadersCount` is rarely used. */
  private grow(): Int32Array {
    const grown = new Int32Array(2 * this.pos.length);
    grown.set(this.pos);
    this.pos = grown;
    return grown;
  }

  private done(next: number, count: number): number {
    this.count = count;
    return next;
  }

  private stop(status: number, reason: string): -1 {
    this.fail(status, reason);
    return -1;
  }
}

/** Whether `host` has only RFC 3986 host and port characters (no userinfo `@`, no `/`, no space). */
export function validAuthority(host: string): boolean {
  for (let i = 0; i < host.length; i++) if (!((CLASS[host.charCodeAt(i)] as number) & HOST)) return false;
  return true;
}

/** `HTTP/1.x` other than 1.0 and 1.1 is HTTP/1.1; another major `HTTP/2`; null if malformed. */
function otherVersion(v: string): 'HTTP/1.1' | 'HTTP/2' | null {
  if (!/^HTTP\/\d\.\d$/.test(v)) return null;
  return v.charCodeAt(5) === 49 ? 'HTTP/1.1' : 'HTTP/2';
}

/**
 * Request heads: method a token, target visible ASCII, `HTTP/1.x`, fields checked, one
 * Content-Length, Transfer-Encoding only `chunked` and never with Content-Length or in
 * HTTP/1.0, exactly one valid Host in HTTP/1.1. Errors answer 400, 431, 501 or 505.
 */
export class RequestHeadParser extends HeadScanner<RequestHead> {
  constructor(limits: H1Limits = REQUEST_LIMITS) {
    super(limits, true);
  }

  protected build(text: string, start: Int32Array, pos: Int32Array, count: number): RequestHead | null {
    const v = text.slice(start[4], start[5]);
    const version = v === 'HTTP/1.1' ? 'HTTP/1.1' : v === 'HTTP/1.0' ? 'HTTP/1.0' : otherVersion(v);
    if (version === null) return this.fail(400, 'bad version');
    if (version === 'HTTP/2') return this.fail(505, 'unsupported version');
    const f = this.framing;
    const headers = readFields(text, pos, count, f, this.seen, REQUEST_FIELDS_ROOM);
    if (!Array.isArray(headers)) return this.fail(headers.status, headers.reason);
    if (f.hosts > 1) return this.fail(400, 'duplicate host');
    if (f.hosts === 0 && version === 'HTTP/1.1') return this.fail(400, 'missing host');
    if (!validAuthority(f.host)) return this.fail(400, 'bad host');
    if (f.chunked && version === 'HTTP/1.0') return this.fail(400, 'transfer-encoding in HTTP/1.0');
    return {
      method: text.slice(start[0], start[1]),
      target: text.slice(start[2], start[3]),
      version,
      headers,
      contentLength: f.contentLength,
      chunked: f.chunked,
    };
  }
}

/**
 * Slots for the fields the edge step appends to a request's (`x-forwarded-for`,
 * `x-forwarded-proto`, `x-request-id` and up to three more, http/edge.ts): the request's
 * fields become the exchange's in place (http/h1-request.ts), so they grow into this room.
 */
const REQUEST_FIELDS_ROOM = 12;

/** Response heads: `HTTP/1.x`, a status 100-599, fields and framing as for requests; errors are 502. */
export class ResponseHeadParser extends HeadScanner<ResponseHead> {
  constructor(limits: H1Limits = RESPONSE_LIMITS) {
    super(limits, false);
  }

  protected build(text: string, start: Int32Array, pos: Int32Array, count: number): ResponseHead | null {
    const v = text.slice(start[0], start[1]);
    if (v !== 'HTTP/1.1' && v !== 'HTTP/1.0' && otherVersion(v) !== 'HTTP/1.1')
      return this.fail(502, 'bad version');
    const at = start[2] as number;
    // PART2 admits digits only: three of them make the status.
    const status =
      (start[3] as number) - at === 3
        ? 100 * (text.charCodeAt(at) - 48) +
          10 * (text.charCodeAt(at + 1) - 48) +
          text.charCodeAt(at + 2) -
          48
        : 0;
    if (status < 100 || status > 599) return this.fail(502, 'bad status');
    const f = this.framing;
    const headers = readFields(text, pos, count, f, this.seen);
    if (!Array.isArray(headers)) return this.fail(headers.status, headers.reason);
    return {
      version: v === 'HTTP/1.0' ? 'HTTP/1.0' : 'HTTP/1.1',
      status,
      headers,
      contentLength: f.contentLength,
      chunked: f.chunked,
    };
  }
}
