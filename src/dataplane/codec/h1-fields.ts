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

/**
 * The last head's fields as a parser read them, by position: the name as it came, its
 * lowercase form and the value. A keep-alive peer sends the same fields in the same order
 * head after head (a client's Host and User-Agent, an upstream's Server and Content-Type),
 * so a field whose bytes match the one read at its position the head before reuses its
 * strings: a compare in place instead of two or three strings made (a slice, its
 * lowercase copy, the value), most of the garbage a head was.
 */
export class SeenFields {
  readonly raw: string[] = [];
  readonly names: string[] = [];
  readonly values: string[] = [];
}

/**
 * Only a head this short, and only its first fields, are remembered: a string of 13 characters
 * or more is a slice that keeps the head's whole text alive, and an idle connection should not
 * hold a large head (or many fields) for as long as it stays open.
 */
const SEEN_HEAD_MAX = 1024;
const SEEN_FIELDS_MAX = 32;

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
  seen: SeenFields,
  room = 0,
): string[] | HeadError {
  const headers: string[] = new Array(2 * count + room);
  let contentLength = -1;
  let te: string | null = null;
  let hosts = 0;
  let host = '';
  const { raw, names, values } = seen;
  const remember = text.length <= SEEN_HEAD_MAX ? SEEN_FIELDS_MAX : 0;
  for (let k = 0; k < count; k++) {
    const ns = pos[4 * k] as number;
    const ne = pos[4 * k + 1] as number;
    let name = names[k] as string;
    const was = raw[k];
    if (was === undefined || was.length !== ne - ns || !text.startsWith(was, ns)) {
      const as = text.slice(ns, ne);
      name = as.toLowerCase();
      if (k < remember) {
        raw[k] = as;
        names[k] = name;
      }
    }
    let vs = pos[4 * k + 2] as number;
    let ve = pos[4 * k + 3] as number;
    while (vs < ve && isOws(text.charCodeAt(vs))) vs++;
    while (ve > vs && isOws(text.charCodeAt(ve - 1))) ve--;
    let value = values[k] as string;
    if (value === undefined || value.length !== ve - vs || !text.startsWith(value, vs)) {
      value = text.slice(vs, ve);
      if (k < remember) values[k] = value;
    }
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
