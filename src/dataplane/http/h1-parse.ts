/**
 * The lean HTTP/1.1 parsing shared by the downstream codec and the upstream pool: a head
 * scan on Buffers and body framers (content-length, chunked, until close). Bodies are
 * sliced out of the socket's Buffers without copying.
 */

const CRLFCRLF = Buffer.from('\r\n\r\n');

/** Where a head ends (index after the blank line), -1 when incomplete. */
export function findHeadEnd(buf: Buffer, from: number): number {
  const i = buf.indexOf(CRLFCRLF, from);
  return i < 0 ? -1 : i + 4;
}

/** A parsed head: the start line split in three, and headers flat with lowercase names. */
export interface ParsedHead {
  a: string;
  b: string;
  c: string;
  headers: string[];
}

/**
 * Parses `start line CRLF (name: value CRLF)* CRLF` between `start` and `end`; null when it
 * is malformed (bad start line, header without colon, whitespace before the colon, obsolete
 * line folding).
 */
export function parseHead(buf: Buffer, start: number, end: number): ParsedHead | null {
  const text = buf.toString('latin1', start, end - 4);
  let lineEnd = text.indexOf('\r\n');
  if (lineEnd < 0) lineEnd = text.length;
  const line = text.slice(0, lineEnd);
  const s1 = line.indexOf(' ');
  const s2 = s1 < 0 ? -1 : line.indexOf(' ', s1 + 1);
  if (s1 <= 0) return null;
  const a = line.slice(0, s1);
  const b = s2 < 0 ? line.slice(s1 + 1) : line.slice(s1 + 1, s2);
  const c = s2 < 0 ? '' : line.slice(s2 + 1);
  const headers: string[] = [];
  let pos = lineEnd + 2;
  while (pos < text.length) {
    let next = text.indexOf('\r\n', pos);
    if (next < 0) next = text.length;
    const colon = text.indexOf(':', pos);
    if (colon <= pos || colon > next) return null;
    const first = text.charCodeAt(pos);
    const beforeColon = text.charCodeAt(colon - 1);
    if (first === 32 || first === 9 || beforeColon === 32 || beforeColon === 9) return null;
    headers.push(text.slice(pos, colon).toLowerCase(), text.slice(colon + 1, next).trim());
    pos = next + 2;
  }
  return { a, b, c, headers };
}

/** Framing of a message body. */
export const Framing = { None: 0, Length: 1, Chunked: 2, UntilClose: 3 } as const;
export type Framing = (typeof Framing)[keyof typeof Framing];

/**
 * An incremental body framer. `feed` returns how many bytes of `buf` from `off` belong to
 * the body, calling `onData` with decoded slices; `done` turns true at the end of the body.
 * `error` is set on a malformed chunked encoding.
 */
export class BodyFramer {
  done = false;
  error = false;
  private remaining = 0;
  /** Chunked states: 0 size line, 1 data, 2 CRLF after data, 3 trailers. */
  private state = 0;
  private line = '';

  constructor(
    readonly framing: Framing,
    length: number,
  ) {
    this.remaining = length;
    if (framing === Framing.None || (framing === Framing.Length && length === 0)) this.done = true;
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
      const line = this.line.trimEnd();
      this.line = '';
      if (this.state === 0) {
        const semi = line.indexOf(';');
        const hex = (semi < 0 ? line : line.slice(0, semi)).trim();
        if (!/^[0-9a-fA-F]{1,15}$/.test(hex)) {
          this.error = this.done = true;
          break;
        }
        this.remaining = Number.parseInt(hex, 16);
        this.state = this.remaining === 0 ? 3 : 1;
      } else if (this.state === 2) {
        if (line !== '') {
          this.error = this.done = true;
          break;
        }
        this.state = 0;
      } else if (line === '') {
        this.done = true;
      }
    }
    return off - start;
  }
}

/** Hop-by-hop headers a proxy never forwards. */
export const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'proxy-authenticate',
  'proxy-authorization',
  'http2-settings',
]);

const REASONS: Record<number, string> = {
  100: 'Continue',
  101: 'Switching Protocols',
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No Content',
  206: 'Partial Content',
  301: 'Moved Permanently',
  302: 'Found',
  303: 'See Other',
  304: 'Not Modified',
  307: 'Temporary Redirect',
  308: 'Permanent Redirect',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  411: 'Length Required',
  413: 'Payload Too Large',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/** The reason phrase of a status (`Unknown` for codes without one). */
export function reasonPhrase(status: number): string {
  return REASONS[status] ?? 'Unknown';
}

/** True for responses that never carry a body. */
export function bodilessStatus(status: number): boolean {
  return status < 200 || status === 204 || status === 304;
}
