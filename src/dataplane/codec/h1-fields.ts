/**
 * The fields of an HTTP/1 head as the proxy keeps them (lowercase names, values without their
 * surrounding whitespace, every field in order) and the framing rules both directions share:
 * one Content-Length, Transfer-Encoding only ending in `chunked` and never beside a
 * Content-Length, the Host fields counted for the request parser (`h1-parse.ts`).
 */
import type { HeadError } from './h1-head.js';

/**
 * What a head's fields say about its framing, checked alike in both directions. One per
 * parser, filled again by each head (`readFields`) and read before the next: a record made per
 * head was about 50 bytes of garbage, twice a proxied request.
 */
export class Framing {
  contentLength = -1;
  chunked = false;
  hosts = 0;
  host = '';
}

/** Optional whitespace: SP or HTAB. */
const isOws = (c: number): boolean => c === 32 || c === 9;

/**
 * Reads a head's fields from its text and the scanner's positions (name start, name end,
 * value start, value end of each), and the framing they ask for (RFC 9112 6.1-6.3) into
 * `framing`: the fields, or why the head is refused with the status a request gets. `room` slots are kept
 * free past the fields, so that what the proxy appends to them later is not a second,
 * larger copy of the array (V8 keeps the capacity when the length is set below it).
 */
export function readFields(
  text: string,
  pos: Int32Array,
  count: number,
  framing: Framing,
  room = 0,
): string[] | HeadError {
  const headers: string[] = new Array(2 * count + room);
  let contentLength = -1;
  let te: string | null = null;
  let hosts = 0;
  let host = '';
  for (let k = 0; k < count; k++) {
    const name = text.slice(pos[4 * k], pos[4 * k + 1]).toLowerCase();
    let vs = pos[4 * k + 2] as number;
    let ve = pos[4 * k + 3] as number;
    while (vs < ve && isOws(text.charCodeAt(vs))) vs++;
    while (ve > vs && isOws(text.charCodeAt(ve - 1))) ve--;
    const value = text.slice(vs, ve);
    headers[2 * k] = name;
    headers[2 * k + 1] = value;
    switch (name) {
      case 'content-length':
        // Duplicates are refused even when equal, as the reference and nginx do.
        if (contentLength >= 0) return { status: 400, reason: 'duplicate content-length' };
        if (!/^\d{1,15}$/.test(value)) return { status: 400, reason: 'bad content-length' };
        contentLength = Number(value);
        break;
      case 'transfer-encoding':
        if (te !== null) return { status: 400, reason: 'duplicate transfer-encoding' };
        te = value.toLowerCase();
        break;
      case 'host':
        hosts += 1;
        host = value;
        break;
    }
  }
  let chunked = false;
  if (te !== null) {
    if (te !== 'chunked') {
      const codings = te.split(',').map((c) => c.trim());
      if (codings.at(-1) !== 'chunked' || codings.includes('')) {
        return { status: 400, reason: 'transfer-encoding without a final chunked' };
      }
      return { status: 501, reason: 'unsupported transfer coding' };
    }
    if (contentLength >= 0) return { status: 400, reason: 'content-length with transfer-encoding' };
    chunked = true;
  }
  headers.length = 2 * count;
  framing.contentLength = contentLength;
  framing.chunked = chunked;
  framing.hosts = hosts;
  framing.host = host;
  return headers;
}
