/**
 * What makes an HTTP/2 message's fields well-formed (RFC 9113 8.1.1, 8.2, 8.3): checked on
 * the decoded list before anything of the request or response is used.
 */

import { validAuthority } from '../h1-parse.js';

/** Bytes a field name may hold: lowercase token characters (RFC 9110 5.6.2). */
const NAME_OK = new Uint8Array(256);
for (const c of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz") NAME_OK[c.charCodeAt(0)] = 1;

/** A method is a token, any case (RFC 9110 9.1). */
const METHOD = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A path is visible ASCII led by `/` (RFC 9113 8.3.1), as an HTTP/1 request target must be. */
const PATH = /^\/[\x21-\x7e]*$/;
/** RFC 3986 3.1. */
const SCHEME = /^[A-Za-z][A-Za-z0-9+\-.]*$/;

/** Headers that are HTTP/1 connection framing: never in an HTTP/2 message (RFC 9113 8.2.2). */
const CONNECTION_SPECIFIC = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
]);

/** A request's pseudo-header fields and its others, split out of the decoded list. */
export interface RequestFields {
  method: string;
  path: string;
  scheme: string;
  /** `:authority`, or '' when absent. */
  authority: string;
  /** `host`, checked against `:authority` by the caller; undefined when absent. */
  host: string | undefined;
  /** The other fields, flat, in order, without `host` and `content-length` (the request carries both itself), `cookie` fields joined into one. */
  headers: string[];
  /** `content-length` as a number, -1 when absent. */
  contentLength: number;
}

function validName(name: string): boolean {
  if (name.length === 0) return false;
  for (let i = 0; i < name.length; i++) if (NAME_OK[name.charCodeAt(i)] !== 1) return false;
  return true;
}

/**
 * A value is HTAB, SP, visible ASCII and obs-text (RFC 9110 5.5), as the HTTP/1 parser
 * requires: RFC 9113 8.2.1 only forbids NUL, CR and LF, but nghttp2 and oghttp2 refuse every
 * control byte, and one let through reached HTTP/1 origins and the text logs (an ANSI escape
 * in a user agent recoloured an operator's terminal).
 */
function validValue(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if ((c < 0x20 && c !== 9) || c === 0x7f) return false;
  }
  return true;
}

/** Checks a regular (not pseudo) field; returns why it is malformed, or null. */
function checkRegular(name: string, value: string): string | null {
  if (!validName(name)) return `invalid field name ${JSON.stringify(name)}`;
  if (!validValue(value)) return `invalid value of ${name}`;
  if (CONNECTION_SPECIFIC.has(name)) return `connection-specific field ${name}`;
  if (name === 'te' && value !== 'trailers') return 'te other than trailers';
  return null;
}

/** A `content-length` value after the one before (-1: none); a string says why it is malformed. */
function contentLengthOf(value: string, before: number): number | string {
  if (!/^[0-9]{1,15}$/.test(value)) return 'invalid content-length';
  const n = Number(value);
  return before >= 0 && n !== before ? 'conflicting content-length' : n;
}

/**
 * Splits a request's decoded fields; a string names what is malformed (a stream error of
 * type PROTOCOL_ERROR).
 */
export function requestFields(list: readonly string[]): RequestFields | string {
  let method: string | undefined;
  let path: string | undefined;
  let scheme: string | undefined;
  let authority: string | undefined;
  let contentLength = -1;
  let host: string | undefined;
  const headers: string[] = [];
  /** Where the first cookie's value is in `headers`, -1 before one. */
  let cookieAt = -1;
  let i = 0;
  for (; i < list.length; i += 2) {
    const name = list[i] as string;
    if (name.charCodeAt(0) !== 58 /* : */) break;
    const value = list[i + 1] as string;
    if (!validValue(value)) return `invalid value of ${name}`;
    if (name === ':method' && method === undefined) method = value;
    else if (name === ':path' && path === undefined) path = value;
    else if (name === ':scheme' && scheme === undefined) scheme = value;
    else if (name === ':authority' && authority === undefined) authority = value;
    else return `unexpected or repeated pseudo-header ${name}`;
  }
  for (; i < list.length; i += 2) {
    const name = list[i] as string;
    const value = list[i + 1] as string;
    const problem = checkRegular(name, value);
    if (problem !== null) return problem;
    if (name === 'content-length') {
      const n = contentLengthOf(value, contentLength);
      if (typeof n === 'string') return n;
      contentLength = n;
      continue;
    }
    if (name === 'host') {
      if (host !== undefined) return 'repeated host';
      host = value;
      continue;
    }
    // Cookie fields may be split in HTTP/2; anything else reads one line (RFC 9113 8.2.3).
    if (name === 'cookie') {
      if (cookieAt >= 0) {
        headers[cookieAt] = `${headers[cookieAt]}; ${value}`;
        continue;
      }
      cookieAt = headers.length + 1;
    }
    headers.push(name, value);
  }
  if (method === undefined) return 'no :method';
  // Each pseudo-header goes into an HTTP/1 request line or Host as it is: a space, a control
  // or an 8-bit byte there would forge another request line, as nghttp2 and oghttp2 refuse.
  if (!METHOD.test(method)) return 'invalid :method';
  if (authority === undefined && host === undefined && method !== 'CONNECT') return 'no :authority or host';
  if (authority !== undefined && !validAuthority(authority)) return 'invalid :authority';
  if (host !== undefined && !validAuthority(host)) return 'invalid host';
  if (method === 'CONNECT') {
    if (authority === undefined || path !== undefined || scheme !== undefined) return 'malformed CONNECT';
  } else if (scheme === undefined || path === undefined || path === '') return 'no :scheme or :path';
  else if (!SCHEME.test(scheme)) return 'invalid :scheme';
  else if (!PATH.test(path) && !(path === '*' && method === 'OPTIONS')) return 'invalid :path';
  return {
    method,
    path: path ?? '',
    scheme: scheme ?? '',
    authority: authority ?? '',
    host,
    headers,
    contentLength,
  };
}

/**
 * A response's head, read from the decoded list; its other fields are the list after its
 * first two (`:status`), in order (`content-length` among them).
 */
export interface ResponseFields {
  status: number;
  /** `content-length` as a number, -1 when absent. */
  contentLength: number;
}

/** A status is three digits (RFC 9110 15); 101 has no place in HTTP/2 (RFC 9113 8.6). */
const STATUS = /^[1-5][0-9][0-9]$/;

/** Splits a response's decoded fields; a string names what is malformed (a stream error). */
export function responseFields(list: readonly string[]): ResponseFields | string {
  if (list[0] !== ':status') return 'no :status';
  const status = list[1] as string;
  if (!STATUS.test(status) || status === '101') return 'invalid :status';
  let contentLength = -1;
  for (let i = 2; i < list.length; i += 2) {
    const name = list[i] as string;
    const value = list[i + 1] as string;
    if (name.charCodeAt(0) === 58) return `unexpected or repeated pseudo-header ${name}`;
    const problem = checkRegular(name, value);
    if (problem !== null) return problem;
    if (name !== 'content-length') continue;
    const n = contentLengthOf(value, contentLength);
    if (typeof n === 'string') return n;
    contentLength = n;
  }
  return { status: Number(status), contentLength };
}

/** Checks a trailer block (RFC 9113 8.1: no pseudo-header fields); returns why it is malformed, or null. */
export function trailerProblem(list: readonly string[]): string | null {
  for (let i = 0; i < list.length; i += 2) {
    const name = list[i] as string;
    if (name.charCodeAt(0) === 58) return `pseudo-header ${name} in trailers`;
    const problem = checkRegular(name, list[i + 1] as string);
    if (problem !== null) return problem;
  }
  return null;
}
