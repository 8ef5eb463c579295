/**
 * What a downstream TLS peer proved about itself, as filters read it
 * (src/dataplane/listeners/peer-identity.ts reads it from the certificate, once per connection
 * and only when asked).
 */
export interface PeerIdentity {
  uriSans: string[];
  dnsSans: string[];
  /** The subject in RFC 2253 form (`CN=client,O=Acme`), as the reference prints it; '' without a certificate. */
  subject: string;
  /** The server name the client asked for in its TLS hello (SNI); '' when it sent none. */
  serverName: string;
}

/**
 * The rest of what a TLS connection's handshake settled, read only when a script asks (Lua's
 * SSL connection object): the peer certificate's facts ('' and 0 without one), the local
 * certificate's names, the version and cipher.
 */
export interface TlsFacts {
  /** The peer's certificate passed the listener's validation. */
  validated: boolean;
  /** Lowercase hex, no separators. */
  sha256: string;
  /** Lowercase hex. */
  serial: string;
  /** RFC 2253, as `subject`. */
  issuer: string;
  /** Seconds since the epoch. */
  validFrom: number;
  expiration: number;
  /** The peer certificate's PEM. */
  pem: string;
  /** The subject's CN (the first) and O values. */
  commonName: string;
  organizations: string[];
  localSubject: string;
  localUriSans: string[];
  localDnsSans: string[];
  /** `TLSv1.3`, ...; '' when unknown. */
  version: string;
  /** The OpenSSL name of the negotiated cipher suite. */
  cipher: string;
}

/**
 * A downstream request as the router sees it, whatever the protocol: the codecs (HTTP/1 on
 * raw sockets, HTTP/2 via `node:http2`) fill one of these and hand it to an exchange.
 */
export interface HttpRequest {
  method: string;
  /** `:path` as sent, query included. */
  path: string;
  /** `Host` or `:authority`, lowercase. */
  authority: string;
  scheme: string;
  /** Flat `[name, value, name, value, ...]`, names lowercase; no pseudo or hop-by-hop headers. */
  headers: string[];
  protocol: 'HTTP/1.0' | 'HTTP/1.1' | 'HTTP/2';
  /** Peer address of the downstream connection. */
  remoteIp: string;
  /** Peer port, and the local `ip:port` of the connection, for the access logs. */
  remotePort?: number;
  localAddress?: string;
  /** The connection's original destination `ip:port`, restored by the `original_dst` listener filter. */
  originalDst?: string;
  /** The peer's `ip:port` as the access logs print it, when the codec joined it once per connection. */
  remoteAddress?: string;
  /**
   * The same object for every request of one downstream connection (the codecs set it): what
   * filters key a connection's own state by (the local rate limit's per-connection buckets).
   */
  connection?: object;
  /** The TLS peer's certificate identity, one per connection; absent on a plain connection. */
  peer?: { get(): PeerIdentity; facts(): TlsFacts };
  /** Declared body length; -1 when unknown (chunked or HTTP/2 without content-length). */
  contentLength: number;
  /** False when the request has no body at all. */
  hasBody: boolean;
  /**
   * The client reads response trailers: it sent `te: trailers`, or (HTTP/2) it is a gRPC
   * request. Set by the codec only when true.
   */
  acceptsTrailers?: boolean;
}

/**
 * `x-proxy-internal: true`: the edge step (src/dataplane/http/edge.ts) found the request
 * internal; filters that treat internal requests apart (ratelimit's `request_type`) read it.
 */
export const INTERNAL_HEADER = 'x-proxy-internal';

/** The value of a header (pseudo headers `:path`, `:method`, `:authority`, `:scheme` too); repeats joined by `,`. */
export function headerValue(req: HttpRequest, name: string): string | undefined {
  if (name.charCodeAt(0) === 58 /* : */) {
    if (name === ':path') return req.path;
    if (name === ':method') return req.method;
    if (name === ':authority' || name === 'host') return req.authority;
    if (name === ':scheme') return req.scheme;
    return undefined;
  }
  if (name === 'host') return req.authority;
  const h = req.headers;
  let out: string | undefined;
  for (let i = 0; i < h.length; i += 2) {
    if (h[i] === name) out = out === undefined ? h[i + 1] : `${out},${h[i + 1]}`;
  }
  return out;
}

/** Removes every value of `name` from a flat header list, in place. */
export function removeHeader(headers: string[], name: string): void {
  let w = 0;
  for (let r = 0; r < headers.length; r += 2) {
    if (headers[r] === name) continue;
    headers[w] = headers[r] as string;
    headers[w + 1] = headers[r + 1] as string;
    w += 2;
  }
  headers.length = w;
}

/** Replaces every value of `name` with one value, in place. */
export function setHeader(headers: string[], name: string, value: string): void {
  removeHeader(headers, name);
  headers.push(name, value);
}

/**
 * Where the router writes the response: the downstream codec's side of one request. The
 * HTTP/1 codec writes raw bytes, the HTTP/2 one a stream.
 */
export interface ResponseSink {
  /** True once `writeHead` ran: after that a failure can only reset the stream. */
  readonly headersSent: boolean;
  /**
   * Sends status and headers (flat, names lowercase; `contentLength` -1 when unknown).
   * `trailers`: the response may end with trailers (HTTP/2 then keeps the stream open for them).
   */
  writeHead(
    status: number,
    headers: string[],
    contentLength: number,
    endStream: boolean,
    trailers?: boolean,
  ): void;
  /** Sends body bytes; false when the downstream buffer is full (wait for `onDrain`). */
  writeData(chunk: Buffer): boolean;
  /** Ends the response, with `trailers` (flat, lowercase names) when the codec can send them. */
  end(trailers?: readonly string[]): void;
  /** Aborts the response after headers were sent (the client sees a reset or a truncated body). */
  reset(): void;
}
