import * as http2 from 'node:http2';
import type * as net from 'node:net';
import type { Counter } from '../../stats/store.js';
import { FLAG, joinHostPort, newStreamInfo } from '../access-log/stream-info.js';
import { withFlatHeaders } from '../codec/h2-headers.js';
import type { HttpRequest, ResponseSink } from '../codec/request.js';
import { restoredDestination } from '../listeners/original-dst.js';
import { type PeerIdentitySource, peerIdentitySource } from '../listeners/peer-identity.js';
import type { DownstreamOwner } from './downstream.js';
import { Exchange, type ExchangeOwner } from './exchange.js';
import { isGrpcContentType } from './grpc.js';
import { StreamTimers } from './stream-timers.js';

const {
  NGHTTP2_INTERNAL_ERROR,
  NGHTTP2_PROTOCOL_ERROR,
  NGHTTP2_FLOW_CONTROL_ERROR,
  NGHTTP2_STREAM_CLOSED,
  NGHTTP2_FRAME_SIZE_ERROR,
  NGHTTP2_COMPRESSION_ERROR,
  NGHTTP2_ENHANCE_YOUR_CALM,
} = http2.constants;

/**
 * The GOAWAY code for a session the binding tears down itself. On a fatal nghttp2 error Node
 * destroys the session with an error whose `errno` is nghttp2's library code and, given no
 * code, says INTERNAL_ERROR; RFC 9113 wants the code of the peer's fault (as nghttp2's own
 * mapping gives it). Keys are nghttp2's `NGHTTP2_ERR_*` values, which Node does not export.
 */
const GOAWAY_CODE_OF_LIB_ERROR = new Map<number, number>([
  [-505, NGHTTP2_PROTOCOL_ERROR], // ERR_PROTO (also Node's verdict on an unsolicited PING ACK)
  [-510, NGHTTP2_STREAM_CLOSED], // ERR_STREAM_CLOSED
  [-522, NGHTTP2_FRAME_SIZE_ERROR], // ERR_FRAME_SIZE_ERROR
  [-523, NGHTTP2_COMPRESSION_ERROR], // ERR_HEADER_COMP
  [-524, NGHTTP2_FLOW_CONTROL_ERROR], // ERR_FLOW_CONTROL
  [-531, NGHTTP2_PROTOCOL_ERROR], // ERR_HTTP_HEADER
  [-532, NGHTTP2_PROTOCOL_ERROR], // ERR_HTTP_MESSAGING
  [-536, NGHTTP2_PROTOCOL_ERROR], // ERR_SETTINGS_EXPECTED
  [-903, NGHTTP2_PROTOCOL_ERROR], // ERR_BAD_CLIENT_MAGIC
  [-904, NGHTTP2_ENHANCE_YOUR_CALM], // ERR_FLOODED
  [-905, NGHTTP2_ENHANCE_YOUR_CALM], // ERR_TOO_MANY_CONTINUATIONS
]);

const ERR_HTTP_HEADER = -531;
const ERR_HTTP_MESSAGING = -532;

/** Makes the binding's own teardowns of `session` say why in their GOAWAY. */
function goAwayWithCause(session: http2.ServerHttp2Session): void {
  const destroy = session.destroy.bind(session);
  session.destroy = (error?: Error, code?: number) =>
    destroy(
      error,
      code ?? GOAWAY_CODE_OF_LIB_ERROR.get((error as { errno?: number } | undefined)?.errno ?? 0),
    );
}

/**
 * What the streams of one session share: its peer and local address, read from its socket
 * once rather than per stream, its count of open streams for `idle_timeout`, and the route
 * and stream idle timers of its finished exchanges, lent to the next ones.
 */
interface SessionState {
  remoteIp: string;
  remotePort: number | undefined;
  /** `remoteIp:remotePort` as the access logs print it. */
  remoteAddress: string;
  localAddress: string;
  originalDst: string | null;
  peer: PeerIdentitySource | undefined;
  open: number;
  /** Armed while no stream is open; null without an `idle_timeout`. */
  idle: NodeJS.Timeout | null;
  /**
   * Timer pairs no exchange holds: a stream takes one and gives it back when its exchange
   * ends, so a request refreshes two `Timeout`s instead of making and clearing them. At most
   * as many as the session ever had exchanges at once.
   */
  spareTimers: StreamTimers[];
  closed: boolean;
}

const SESSIONS = new WeakMap<http2.Http2Session, SessionState>();

function sessionOf(session: http2.Http2Session | undefined): SessionState {
  let state = session && SESSIONS.get(session);
  if (!state) {
    const socket = session?.socket;
    const remoteIp = (socket?.remoteAddress ?? '').replace(/^::ffff:/, '');
    state = {
      remoteIp,
      remotePort: socket?.remotePort,
      remoteAddress: joinHostPort(remoteIp, socket?.remotePort),
      localAddress: joinHostPort(socket?.localAddress, socket?.localPort),
      originalDst: restoredDestination(socket as net.Socket | undefined),
      peer: peerIdentitySource(socket as net.Socket | undefined),
      open: 0,
      idle: null,
      spareTimers: [],
      closed: false,
    };
    if (session) SESSIONS.set(session, state);
  }
  return state;
}

/**
 * A received header (or trailer) block as a flat list, without pseudo and connection headers,
 * nor `host` and `content-length`: the request carries its authority and length itself, and
 * an HTTP/1 upstream gets each once (RFC 9113 8.3.1: `:authority` wins).
 */
function flatten(headers: http2.IncomingHttpHeaders): string[] {
  const flat: string[] = [];
  for (const name in headers) {
    const value = headers[name];
    if (name.charCodeAt(0) === 58 || value === undefined || name === 'connection') continue;
    if (name === 'host' || name === 'content-length') continue;
    // `te: trailers` (the only value HTTP/2 allows) goes upstream: gRPC servers want it.
    if (name === 'te' && value !== 'trailers') continue;
    if (Array.isArray(value)) for (const v of value) flat.push(name, v);
    else flat.push(name, value);
  }
  return flat;
}

/** One error for every reset this codec makes: only its presence matters to Node. */
const RESET = new Error('stream reset by the proxy');

const MALFORMED = new Error('malformed HTTP/2 request');

const NO_TRAILERS: readonly string[] = [];

/** The timers of a stream refused before its exchange: never armed, never lent. */
const NO_TIMERS = new StreamTimers();

/** A stream's 'error' is followed by its 'close', which is what the exchange hears. */
function ignoreError(): void {}

/** What the streams of one HTTP/2 codec share: how it treats a malformed request. */
interface CodecShared {
  /** `http2.rx_messaging_error`, as the reference counts a malformed request. */
  rxMessagingError: Counter;
  /** `stream_error_on_invalid_http_messaging`: reset the stream only, else end the connection. */
  streamError: boolean;
}

/**
 * Refuses a malformed request (RFC 9113 8.1.1): counted and logged with `DPE`, then its stream
 * reset, or with the reference's default the whole connection ended with GOAWAY PROTOCOL_ERROR.
 */
function refuseMalformed(
  hcm: DownstreamOwner,
  codec: CodecShared,
  stream: http2.ServerHttp2Stream,
  req: HttpRequest,
): void {
  codec.rxMessagingError.inc();
  const info = newStreamInfo(req, req.remoteAddress ?? '', req.localAddress ?? '');
  info.flags |= FLAG.DPE;
  hcm.onStreamEnd(info);
  stream.on('error', ignoreError);
  if (codec.streamError) stream.close(NGHTTP2_PROTOCOL_ERROR);
  // The session's 'error' counts downstream_cx_protocol_error.
  else stream.session?.destroy(MALFORMED, NGHTTP2_PROTOCOL_ERROR);
}

/** The `H2Stream` a node:http2 stream carries, for the listeners every stream shares. */
const OWNER = Symbol('h2 downstream stream');
type OwnedStream = http2.ServerHttp2Stream & { [OWNER]: H2Stream };

/*
 * One function per event for every stream (`this` is the stream), not closures per stream:
 * a stream lives as long as its request, and with a hundred in flight what each one holds
 * is copied at every scavenge.
 */
function onRequestData(this: OwnedStream, chunk: Buffer): void {
  this[OWNER].body?.onBody(chunk);
}
function onRequestEnd(this: OwnedStream): void {
  this[OWNER].body?.onBodyEnd();
}
function onRequestTrailers(this: OwnedStream, trailers: http2.IncomingHttpHeaders): void {
  this[OWNER].body?.onRequestTrailers(flatten(trailers));
}
function onStreamClose(this: OwnedStream): void {
  this[OWNER].onClose();
}
function onWantTrailers(this: OwnedStream): void {
  this[OWNER].sendTrailers();
}
function onStreamDrain(this: OwnedStream): void {
  this[OWNER].onDrain();
}

/** One downstream HTTP/2 stream: the exchange's sink and owner. */
class H2Stream implements ResponseSink, ExchangeOwner {
  headersSent = false;
  private exchange: Exchange | null = null;
  /** The exchange the request's body goes to, kept after the exchange is done (it ignores it then). */
  body: Exchange | null = null;
  private contentLength = -1;
  private drainWatched = false;
  /**
   * The response went out with `waitForTrailers`: the stream stays open after its last DATA
   * frame until `wantTrailers` sends these (none: an empty DATA frame ends it).
   */
  private trailers: readonly string[] | null = null;
  readonly timers: StreamTimers;
  private readonly session: SessionState;

  constructor(
    readonly hcm: DownstreamOwner,
    readonly stream: http2.ServerHttp2Stream,
    headers: http2.IncomingHttpHeaders,
    private readonly codec: CodecShared,
  ) {
    const flat = flatten(headers);
    const cl = headers['content-length'];
    const method = String(headers[':method'] ?? 'GET');
    const contentLength = cl === undefined ? -1 : Number(cl);
    this.contentLength = contentLength;
    const hasBody = !stream.readableEnded && !stream.endAfterHeaders;
    const session = sessionOf(stream.session);
    this.session = session;
    const authority = String(headers[':authority'] ?? headers.host ?? '').toLowerCase();
    const req: HttpRequest = {
      method,
      path: String(headers[':path'] ?? '/'),
      authority,
      scheme: String(headers[':scheme'] ?? 'http'),
      headers: flat,
      protocol: 'HTTP/2',
      remoteIp: session.remoteIp,
      remotePort: session.remotePort,
      remoteAddress: session.remoteAddress,
      localAddress: session.localAddress,
      contentLength: hasBody ? contentLength : 0,
      hasBody,
    };
    if (session.originalDst) req.originalDst = session.originalDst;
    if (session.peer) req.peer = session.peer;
    const host = headers.host;
    // A `host` naming another entity than `:authority` makes the request malformed (RFC 9113 8.3.1).
    if (
      host !== undefined &&
      headers[':authority'] !== undefined &&
      String(host).toLowerCase() !== authority
    ) {
      this.timers = NO_TIMERS;
      refuseMalformed(hcm, codec, stream, req);
      return;
    }
    this.timers = session.spareTimers.pop() ?? new StreamTimers();
    if (headers.te === 'trailers' || isGrpcContentType(headers['content-type'] as string | undefined))
      req.acceptsTrailers = true;
    const ex = new Exchange(hcm, req, this, this);
    this.exchange = ex;
    session.open += 1;
    // A request without a body is never read: reading its end would let node:http2 destroy
    // the stream as soon as it closes, before the callback of the response's last write,
    // and Node's Writable then builds an ERR_STREAM_DESTROYED (with its stack) per request.
    // Unread, the stream is destroyed once both its sides are finished.
    (stream as OwnedStream)[OWNER] = this;
    if (hasBody) {
      this.body = ex;
      stream.on('data', onRequestData);
      stream.on('end', onRequestEnd);
      if (req.acceptsTrailers === true) stream.on('trailers', onRequestTrailers);
    }
    stream.on('close', onStreamClose);
    stream.on('error', ignoreError);
    ex.start();
  }

  onClose(): void {
    const session = this.session;
    session.open -= 1;
    if (session.open === 0) session.idle?.refresh();
    const ex = this.exchange;
    if (!ex) return;
    const stream = this.stream;
    // nghttp2 resets a stream whose DATA fell short of its content-length (RFC 9113 8.1.1).
    if (this.contentLength >= 0 && !stream.readableEnded && stream.rstCode === NGHTTP2_PROTOCOL_ERROR) {
      this.codec.rxMessagingError.inc();
      ex.info.flags |= FLAG.DPE;
    }
    ex.onDownstreamReset();
  }

  onDrain(): void {
    this.exchange?.onDownstreamDrain();
  }

  writeHead(
    status: number,
    headers: string[],
    contentLength: number,
    endStream: boolean,
    trailers?: boolean,
  ): void {
    this.headersSent = true;
    const stream = this.stream;
    if (stream.destroyed || stream.closed) return;
    // A flat list as node:http2 takes it (repeated names stay separate fields, checked as an
    // object's would be): no header object, nor the copy node:http2 makes of one.
    const out = [':status', String(status)];
    const length = contentLength >= 0 && status !== 204 && status !== 304;
    for (let i = 0; i < headers.length; i += 2) {
      const name = headers[i] as string;
      // The known length replaces one a filter or local reply may have listed.
      if (length && name === 'content-length') continue;
      out.push(name, headers[i + 1] as string);
    }
    if (length) out.push('content-length', String(contentLength));
    try {
      // A known empty body ends the stream with the HEADERS frame: no DATA frame, no write.
      // That is also how a gRPC trailers-only answer must arrive.
      const ends = endStream || contentLength === 0;
      if (trailers === true && !ends) {
        this.trailers = NO_TRAILERS;
        stream.respond(out, { waitForTrailers: true });
        stream.once('wantTrailers', onWantTrailers);
      } else stream.respond(out, { endStream: ends });
    } catch {
      stream.close(NGHTTP2_INTERNAL_ERROR);
    }
  }

  writeData(chunk: Buffer): boolean {
    const stream = this.stream;
    if (stream.destroyed) return true;
    if (stream.write(chunk)) return true;
    if (!this.drainWatched) {
      // Watched from the first full buffer on: most responses never fill it.
      this.drainWatched = true;
      stream.on('drain', onStreamDrain);
    }
    return false;
  }

  end(trailers?: readonly string[]): void {
    if (trailers !== undefined && this.trailers !== null) this.trailers = trailers;
    if (!this.stream.writableEnded) this.stream.end();
  }

  sendTrailers(): void {
    const out = withFlatHeaders({}, this.trailers as readonly string[]);
    try {
      // Empty, Node ends the stream with an empty DATA frame instead.
      this.stream.sendTrailers(out);
    } catch {
      this.stream.close(NGHTTP2_INTERNAL_ERROR);
    }
  }

  reset(): void {
    // Not `close(code)`: it ends the writable side first, and a response whose request
    // already ended would then look complete (END_STREAM), the RST_STREAM after it dropped.
    // Destroyed with an error, the stream sends RST_STREAM(INTERNAL_ERROR) at once.
    this.stream.destroy(RESET);
  }

  onExchangeDone(): void {
    this.exchange = null;
    // The exchange disarmed them; a session that closed takes no more streams.
    if (this.session.closed) this.timers.close();
    else this.session.spareTimers.push(this.timers);
  }

  pauseReading(): void {
    this.stream.pause();
  }

  resumeReading(): void {
    this.stream.resume();
  }
}

/**
 * The HCM's connection timeouts on a session: `idle_timeout` while no stream is open, and
 * `max_connection_duration`. Either sends GOAWAY (`close`): streams in flight finish, then
 * the session ends.
 */
function watchSession(hcm: DownstreamOwner, session: http2.ServerHttp2Session): void {
  const t = hcm.timeouts;
  const timers: NodeJS.Timeout[] = [];
  if (t.maxConnectionDurationMs > 0) {
    const onMax = () => {
      hcm.stats.cxMaxDurationReached.inc();
      session.close();
    };
    timers.push(setTimeout(onMax, t.maxConnectionDurationMs).unref());
  }
  if (t.connectionIdleMs > 0) {
    const state = sessionOf(session);
    const idle = setTimeout(() => {
      if (state.open > 0 || session.closed) return;
      hcm.stats.cxIdleTimeout.inc();
      session.close();
    }, t.connectionIdleMs).unref();
    state.idle = idle;
    timers.push(idle);
  }
  session.once('close', () => {
    for (const timer of timers) clearTimeout(timer);
    const state = SESSIONS.get(session);
    if (!state) return;
    state.closed = true;
    for (const spare of state.spareTimers) spare.close();
    state.spareTimers.length = 0;
  });
}

/**
 * The HTTP/2 codec: a `node:http2` server that never listens; the connection manager hands
 * it sockets whose first bytes are the HTTP/2 connection preface (prior knowledge, h2c).
 */
export function createH2Server(hcm: DownstreamOwner): http2.Http2Server {
  const codec: CodecShared = {
    rxMessagingError: hcm.deps.ctx.stats.counter('http2.rx_messaging_error'),
    streamError: hcm.spec.http2.streamErrorOnInvalidMessaging,
  };
  const server = http2.createServer({
    maxHeaderListPairs: 256,
    maxSessionMemory: 64,
    settings: { maxHeaderListSize: hcm.maxRequestHeadersBytes, ...hcm.spec.http2.settings },
  });
  server.on('stream', (stream, headers) => {
    try {
      new H2Stream(hcm, stream, headers, codec);
    } catch (err) {
      hcm.log.error({ err }, 'HTTP/2 stream setup failed');
      stream.close(NGHTTP2_INTERNAL_ERROR);
    }
  });
  const connectionWindow = hcm.spec.http2.connectionWindowSize;
  server.on('session', (session) => {
    if (connectionWindow !== null) session.setLocalWindowSize(connectionWindow);
    goAwayWithCause(session);
    watchSession(hcm, session);
    hcm.trackSession(session);
    session.on('error', (err: { errno?: number }) => {
      hcm.stats.cxProtocolError.inc();
      // DATA beyond the content-length: nghttp2 ends the connection itself.
      if (err.errno === ERR_HTTP_MESSAGING || err.errno === ERR_HTTP_HEADER) codec.rxMessagingError.inc();
    });
  });
  server.on('sessionError', () => {});
  return server;
}
