/**
 * An HTTP/1 request head read as the request the exchange serves (`HttpRequest`): the Host or
 * an absolute-form target as its authority, the hop-by-hop fields taken out, and what the head
 * asks of the connection (keep-alive, an upgrade, `100-continue`). Used by `h1-downstream.ts`.
 */
import type * as net from 'node:net';
import { joinHostPort } from '../access-log/stream-info.js';
import type { RequestHead } from '../codec/h1-head.js';
import { validAuthority } from '../codec/h1-parse.js';
import type { HttpRequest } from '../codec/request.js';
import { restoredDestination } from '../listeners/original-dst.js';
import { type PeerIdentitySource, peerIdentitySource } from '../listeners/peer-identity.js';

/** What every request of one downstream connection carries about it, read once from its socket. */
export interface ConnectionFacts {
  /** A TLS socket (a chain with a DownstreamTlsContext) carries https. */
  scheme: 'http' | 'https';
  remoteIp: string;
  remotePort: number | undefined;
  remoteAddress: string;
  localAddress: string;
  originalDst: string | null;
  peer: PeerIdentitySource | undefined;
}

export function connectionFacts(socket: net.Socket): ConnectionFacts {
  const peer = peerIdentitySource(socket);
  return {
    scheme: peer ? 'https' : 'http',
    remoteIp: (socket.remoteAddress ?? '').replace(/^::ffff:/, ''),
    remotePort: socket.remotePort,
    remoteAddress: joinHostPort(socket.remoteAddress, socket.remotePort),
    localAddress: joinHostPort(socket.localAddress, socket.localPort),
    originalDst: restoredDestination(socket),
    peer,
  };
}

/** `Connection` options that name no field. */
const CONNECTION_OPTIONS = new Set(['close', 'keep-alive', 'upgrade', 'http2-settings', 'connection', 'te']);
/** Fields whose removal would hide where a request came from. */
const FORWARDING_FIELDS = new Set(['x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto']);

/**
 * The fields a request's `Connection` nominates (lowercase): they are this hop's and go no
 * further (RFC 9110 7.6.1). Null, refusing the request as the reference does, for ten options
 * or more, or one naming an `X-Forwarded-*` field or a pseudo-header: a client nominating
 * `X-Forwarded-For` would have a proxy strip what an earlier one added.
 */
function nominatedFields(connection: string): Set<string> | null {
  const names = connection
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  if (names.length >= 10) return null;
  const fields = new Set<string>();
  for (const name of names) {
    if (FORWARDING_FIELDS.has(name) || name.charCodeAt(0) === 58 /* : */) return null;
    if (!CONNECTION_OPTIONS.has(name)) fields.add(name);
  }
  return fields;
}

/** Takes the fields named in `names` out of a flat `[name, value, ...]` list, in place. */
function dropFields(headers: string[], names: Set<string>): void {
  let to = 0;
  for (let i = 0; i < headers.length; i += 2) {
    if (names.has(headers[i] as string)) continue;
    headers[to++] = headers[i] as string;
    headers[to++] = headers[i + 1] as string;
  }
  headers.length = to;
}

/** Whether a TE value lists the `trailers` member (RFC 9110 10.1.4: `trailers` takes no parameters). */
function namesTrailers(te: string): boolean {
  for (const member of te.split(',')) if (member.trim().toLowerCase() === 'trailers') return true;
  return false;
}

/** A request head read as the exchange's request, with what it asks of the connection. */
export interface H1RequestStart {
  req: HttpRequest;
  /** The connection may serve another request after this one (RFC 9112 9.3). */
  keepAlive: boolean;
  /** The protocol an upgrade asks for (`Upgrade` with `Connection: upgrade`); null for none. */
  upgrade: string | null;
  /** `Expect: 100-continue`. */
  expectContinue: boolean;
}

/**
 * The request of `head` on a connection described by `facts`; null (answered 400) for an
 * absolute-form target that is no http(s) URL with a valid authority, or a `Connection` the
 * reference refuses.
 */
export function requestFromHead(
  head: RequestHead,
  facts: ConnectionFacts,
  allowAbsoluteUrl: boolean,
): H1RequestStart | null {
  const method = head.method;
  const protocol = head.version;
  const contentLength = head.contentLength;
  const chunked = head.chunked;
  let authority = '';
  let connection = '';
  let upgrade: string | null = null;
  let expectContinue = false;
  // The head's fields become the request's in place: a second array was about 150 bytes of
  // garbage per request, and the parser gave the first one room for what the edge appends.
  const headers = head.headers;
  let kept = 0;
  let teTrailers = false;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    const value = headers[i + 1] as string;
    switch (name) {
      case 'host':
        authority = value.toLowerCase();
        continue;
      case 'content-length':
      case 'transfer-encoding':
        continue;
      case 'connection':
        // Several fields are one list (RFC 9110 5.3): `Connection: upgrade` then `Connection: close`.
        connection = connection ? `${connection}, ${value.toLowerCase()}` : value.toLowerCase();
        continue;
      case 'upgrade':
        upgrade = value;
        continue;
      case 'expect':
        // An HTTP/1.0 client knows no interim answer: it would read a 100 as the response
        // (RFC 9110 10.1.1 has servers ignore the expectation in HTTP/1.0).
        if (protocol === 'HTTP/1.1' && value.toLowerCase() === '100-continue') expectContinue = true;
        continue;
      case 'te':
        // As the reference (and HTTP/2, which allows no other value): `te: trailers` goes on,
        // once, for gRPC origins; other transfer codings are this hop's.
        if (teTrailers || !namesTrailers(value)) continue;
        teTrailers = true;
        headers[kept++] = name;
        headers[kept++] = 'trailers';
        continue;
      case 'keep-alive':
      case 'proxy-connection':
      case 'trailer':
      case 'http2-settings':
        continue;
    }
    headers[kept++] = name;
    headers[kept++] = value;
  }
  headers.length = kept;
  // An upgrade needs both fields (RFC 9110 7.8); h2c is not offered, so such a request is
  // served as HTTP/1.1, as the reference and nginx do (`curl --http2` sends it on http://).
  if (upgrade !== null && (!connection.includes('upgrade') || upgrade.toLowerCase() === 'h2c'))
    upgrade = null;
  if (connection !== '' && upgrade === null) {
    const fields = nominatedFields(connection);
    if (fields === null) return null;
    if (fields.size > 0) dropFields(headers, fields);
  }
  let path = head.target;
  if (path.charCodeAt(0) !== 47 /* / */ && method !== 'CONNECT' && path !== '*') {
    // Absolute form (`GET http://host/path`): the authority comes from it (RFC 9112 3.2.2).
    const m = /^http(s?):\/\/([^/?#]+)(.*)$/i.exec(path);
    // The authority becomes the Host: checked as a Host is (userinfo refused, RFC 9110 4.2.4).
    if (!m || !validAuthority(m[2] as string)) return null;
    // Without allow_absolute_url the target stays the path, which the exchange answers 404.
    if (allowAbsoluteUrl) {
      // `https://` on a plain connection is refused, as the reference refuses "https in the clear".
      if (m[1] !== '' && facts.scheme !== 'https') return null;
      authority = (m[2] as string).toLowerCase();
      const rest = m[3] as string;
      path = rest.charCodeAt(0) === 47 /* / */ ? rest : `/${rest}`;
    }
  }
  const hasBody = chunked || contentLength > 0;
  const req: HttpRequest = {
    method,
    path,
    authority,
    scheme: facts.scheme,
    headers,
    protocol,
    remoteIp: facts.remoteIp,
    remotePort: facts.remotePort,
    localAddress: facts.localAddress,
    remoteAddress: facts.remoteAddress,
    contentLength: chunked ? -1 : Math.max(contentLength, 0),
    hasBody,
    connection: facts,
  };
  if (teTrailers) req.acceptsTrailers = true;
  if (facts.originalDst) req.originalDst = facts.originalDst;
  if (facts.peer) req.peer = facts.peer;
  const keepAlive =
    protocol === 'HTTP/1.0' ? connection.includes('keep-alive') : !connection.includes('close');
  return { req, keepAlive, upgrade, expectContinue };
}
