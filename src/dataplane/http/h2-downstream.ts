import type * as net from 'node:net';
import type { Counter } from '../../stats/store.js';
import { FLAG, joinHostPort, newStreamInfo } from '../access-log/stream-info.js';
import type { SessionEvents, SessionOptions } from '../codec/h2/connection.js';
import type { RequestFields } from '../codec/h2/fields.js';
import { ERROR } from '../codec/h2/frames.js';
import type { FloodKind } from '../codec/h2/limits.js';
import { ServerSession } from '../codec/h2/session.js';
import type { ServerStream, StreamHandler } from '../codec/h2/stream.js';
import type { HttpRequest, ResponseSink } from '../codec/request.js';
import { restoredDestination } from '../listeners/original-dst.js';
import { type PeerIdentitySource, peerIdentitySource } from '../listeners/peer-identity.js';
import type { DownstreamOwner } from './downstream.js';
import { Exchange, type ExchangeOwner } from './exchange.js';
import { isGrpcContentType } from './grpc.js';
import { StreamTimers } from './stream-timers.js';

const FLOODS: readonly FloodKind[] = [
  'outbound_flood',
  'outbound_control_flood',
  'inbound_empty_frames_flood',
  'inbound_priority_frames_flood',
  'inbound_window_update_frames_flood',
];

/** What the connections of one connection manager share: session options and the `http2.*` stats. */
export class H2Codec {
  readonly options: SessionOptions;
  /** `http2.rx_messaging_error`, as the reference counts a malformed request. */
  readonly rxMessagingError: Counter;
  readonly headerOverflow: Counter;
  readonly keepaliveTimeout: Counter;
  readonly floods: Map<FloodKind, Counter>;

  constructor(readonly hcm: DownstreamOwner) {
    const h2 = hcm.spec.http2;
    const stats = hcm.deps.ctx.stats;
    this.options = {
      headerTableSize: h2.settings.headerTableSize ?? 4096,
      maxConcurrentStreams: h2.settings.maxConcurrentStreams ?? null,
      initialWindowSize: h2.settings.initialWindowSize ?? 65535,
      connectionWindowSize: h2.connectionWindowSize ?? 65535,
      maxHeaderListSize: hcm.maxRequestHeadersBytes,
      maxHeadersCount: hcm.spec.maxHeadersCount,
      streamErrorOnInvalidMessaging: h2.streamErrorOnInvalidMessaging,
      limits: h2.limits,
      keepalive: h2.keepalive,
    };
    this.rxMessagingError = stats.counter('http2.rx_messaging_error');
    this.headerOverflow = stats.counter('http2.header_overflow');
    this.keepaliveTimeout = stats.counter('http2.keepalive_timeout');
    this.floods = new Map(FLOODS.map((kind) => [kind, stats.counter(`http2.${kind}`)]));
  }

  /** Serves HTTP/2 on `socket`; `first`: bytes already read from it (the preface the manager sniffed). */
  accept(socket: net.Socket, first: Buffer | null): ServerSession {
    const conn = new H2Connection(this, socket);
    if (first) conn.session.onData(first);
    return conn.session;
  }
}

/** A request as far as a malformed head tells it, for its access log line. */
function partialRequest(fields: readonly string[], conn: H2Connection): HttpRequest {
  const pseudo = (name: string) => {
    for (let i = 0; i < fields.length; i += 2) if (fields[i] === name) return fields[i + 1] as string;
    return '';
  };
  return {
    method: pseudo(':method'),
    path: pseudo(':path'),
    authority: pseudo(':authority').toLowerCase(),
    scheme: pseudo(':scheme'),
    headers: [],
    protocol: 'HTTP/2',
    remoteIp: conn.remoteIp,
    remotePort: conn.remotePort,
    remoteAddress: conn.remoteAddress,
    localAddress: conn.localAddress,
    contentLength: -1,
    hasBody: false,
  };
}

/**
 * One downstream HTTP/2 connection: its session's events, its peer and local address (read
 * once, not per stream), its count of open streams for `idle_timeout`, and the route and
 * stream idle timers of finished exchanges, lent to the next ones.
 */
class H2Connection implements SessionEvents {
  readonly session: ServerSession;
  readonly hcm: DownstreamOwner;
  readonly remoteIp: string;
  readonly remotePort: number | undefined;
  /** `remoteIp:remotePort` as the access logs print it. */
  readonly remoteAddress: string;
  readonly localAddress: string;
  readonly originalDst: string | null;
  readonly peer: PeerIdentitySource | undefined;
  /** A TLS socket (ALPN h2) carries https. */
  readonly scheme: 'http' | 'https';
  open = 0;
  /** Armed while no stream is open; null without an `idle_timeout`. */
  private idle: NodeJS.Timeout | null = null;
  private maxDuration: NodeJS.Timeout | null = null;
  /**
   * Timer pairs no exchange holds: a stream takes one and gives it back when its exchange
   * ends, so a request refreshes two `Timeout`s instead of making and clearing them.
   */
  readonly spareTimers: StreamTimers[] = [];
  closed = false;

  constructor(
    readonly codec: H2Codec,
    socket: net.Socket,
  ) {
    this.hcm = codec.hcm;
    this.remoteIp = (socket.remoteAddress ?? '').replace(/^::ffff:/, '');
    this.remotePort = socket.remotePort;
    this.remoteAddress = joinHostPort(this.remoteIp, socket.remotePort);
    this.localAddress = joinHostPort(socket.localAddress, socket.localPort);
    this.originalDst = restoredDestination(socket);
    this.peer = peerIdentitySource(socket);
    this.scheme = 'encrypted' in socket ? 'https' : 'http';
    this.session = new ServerSession(socket, codec.options, this);
    this.watch();
    this.hcm.trackSession(this.session);
  }

  /**
   * The connection manager's timeouts: `idle_timeout` while no stream is open, and
   * `max_connection_duration`. Either sends GOAWAY: streams in flight finish, then it closes.
   */
  private watch(): void {
    const t = this.hcm.timeouts;
    if (t.maxConnectionDurationMs > 0) {
      this.maxDuration = setTimeout(() => {
        this.hcm.stats.cxMaxDurationReached.inc();
        this.session.close();
      }, t.maxConnectionDurationMs).unref();
    }
    if (t.connectionIdleMs > 0) {
      this.idle = setTimeout(() => {
        if (this.open > 0 || this.session.closed) return;
        this.hcm.stats.cxIdleTimeout.inc();
        this.session.close();
      }, t.connectionIdleMs).unref();
    }
  }

  onRequest(stream: ServerStream, request: RequestFields, endStream: boolean): void {
    try {
      new H2Stream(this, stream, request, endStream);
    } catch (err) {
      this.hcm.log.error({ err }, 'HTTP/2 stream setup failed');
      stream.reset(ERROR.INTERNAL_ERROR);
    }
  }

  onMalformed(fields: readonly string[], _reason: string): void {
    this.logMalformed(partialRequest(fields, this));
  }

  /** Counts and logs (with `DPE`) a request refused as malformed. */
  logMalformed(req: HttpRequest): void {
    this.codec.rxMessagingError.inc();
    const info = newStreamInfo(req, this.remoteAddress, this.localAddress);
    info.flags |= FLAG.DPE;
    this.hcm.onStreamEnd(info);
  }

  onMessagingError(stream: ServerStream): void {
    this.codec.rxMessagingError.inc();
    (stream.handler as H2Stream | null)?.messagingError();
  }

  /** Answers 431, counted and logged (with `DPE`) as the HTTP/1 codec's 431 is. */
  onHeaderOverflow(stream: ServerStream, fields: readonly string[]): void {
    this.codec.headerOverflow.inc();
    stream.respond(431, [], true);
    const s = this.hcm.stats;
    s.rqTooLarge.inc();
    s.rqClasses[3]?.inc();
    s.rqCompleted.inc();
    const info = newStreamInfo(partialRequest(fields, this), this.remoteAddress, this.localAddress);
    info.flags |= FLAG.DPE;
    info.responseCode = 431;
    this.hcm.onStreamEnd(info);
  }

  onTrailerOverflow(stream: ServerStream): void {
    this.codec.headerOverflow.inc();
    (stream.handler as H2Stream | null)?.messagingError();
  }

  onKeepaliveTimeout(): void {
    this.codec.keepaliveTimeout.inc();
  }

  onConnectionError(_code: number, flood: FloodKind | null): void {
    this.hcm.stats.cxProtocolError.inc();
    if (flood !== null) this.codec.floods.get(flood)?.inc();
  }

  onClose(): void {
    this.closed = true;
    if (this.idle) clearTimeout(this.idle);
    if (this.maxDuration) clearTimeout(this.maxDuration);
    for (const spare of this.spareTimers) spare.close();
    this.spareTimers.length = 0;
  }

  streamClosed(): void {
    this.open -= 1;
    if (this.open === 0) this.idle?.refresh();
  }
}

/** The timers of a stream refused before its exchange: never armed, never lent. */
const NO_TIMERS = new StreamTimers();

/** Whether the request's fields ask for response trailers: `te: trailers`, or gRPC. */
function acceptsTrailers(headers: readonly string[]): boolean {
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i];
    if (name === 'te' && headers[i + 1] === 'trailers') return true;
    if (name === 'content-type' && isGrpcContentType(headers[i + 1])) return true;
  }
  return false;
}

/** Removes `expect: 100-continue` from `headers` (flat, names lowercase); whether it was there. */
function takeExpectContinue(headers: string[]): boolean {
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i] === 'expect' && (headers[i + 1] as string).toLowerCase() === '100-continue') {
      headers.splice(i, 2);
      return true;
    }
  }
  return false;
}

/** One downstream HTTP/2 stream: the exchange's sink and owner, and the codec stream's handler. */
class H2Stream implements ResponseSink, ExchangeOwner, StreamHandler {
  headersSent = false;
  private exchange: Exchange | null = null;
  /** The exchange the request's body goes to, kept after the exchange is done (it ignores it then). */
  private body: Exchange | null = null;
  /** The response may end with trailers (writeHead said so). */
  private trailers = false;
  readonly timers: StreamTimers;

  constructor(
    private readonly conn: H2Connection,
    private readonly stream: ServerStream,
    fields: RequestFields,
    endStream: boolean,
  ) {
    // First: a stream reset while this is built still tells it.
    stream.handler = this;
    const hcm = conn.hcm;
    const hasBody = !endStream;
    const authority = (fields.authority || fields.host || '').toLowerCase();
    const req: HttpRequest = {
      method: fields.method,
      path: fields.path,
      authority,
      scheme: fields.scheme || conn.scheme,
      headers: fields.headers,
      protocol: 'HTTP/2',
      remoteIp: conn.remoteIp,
      remotePort: conn.remotePort,
      remoteAddress: conn.remoteAddress,
      localAddress: conn.localAddress,
      contentLength: hasBody ? fields.contentLength : 0,
      hasBody,
      connection: conn,
    };
    if (conn.originalDst) req.originalDst = conn.originalDst;
    if (conn.peer) req.peer = conn.peer;
    conn.open += 1;
    // A `host` naming another entity than `:authority` makes the request malformed (RFC 9113 8.3.1).
    if (fields.host !== undefined && fields.authority !== '' && fields.host.toLowerCase() !== authority) {
      this.timers = NO_TIMERS;
      this.refuseMalformed(req);
      return;
    }
    this.timers = conn.spareTimers.pop() ?? new StreamTimers();
    if (acceptsTrailers(fields.headers)) req.acceptsTrailers = true;
    // The proxy answers `expect: 100-continue` itself, as the HTTP/1 codec and the reference do
    // for every protocol: forwarded, the upstream's 100 was dropped and the client waited.
    if (takeExpectContinue(fields.headers) && hasBody) stream.interim(100);
    const ex = new Exchange(hcm, req, this, this);
    this.exchange = ex;
    if (hasBody) this.body = ex;
    ex.start();
  }

  /**
   * Refuses a malformed request (RFC 9113 8.1.1): counted and logged with `DPE`, then its
   * stream reset, or with the reference's default the whole connection ended with GOAWAY
   * PROTOCOL_ERROR.
   */
  private refuseMalformed(req: HttpRequest): void {
    this.conn.logMalformed(req);
    if (this.conn.codec.options.streamErrorOnInvalidMessaging) this.stream.reset(ERROR.PROTOCOL_ERROR);
    else this.conn.session.connectionError(ERROR.PROTOCOL_ERROR);
  }

  /** The request's DATA disagreed with its content-length: its log line says so. */
  messagingError(): void {
    if (this.exchange) this.exchange.info.flags |= FLAG.DPE;
  }

  onData(chunk: Buffer): void {
    this.body?.onBody(chunk);
  }

  onEnd(trailers: string[] | null): void {
    const body = this.body;
    if (body === null) return;
    if (trailers !== null) body.onRequestTrailers(trailers);
    body.onBodyEnd();
  }

  onClose(code: number): void {
    this.conn.streamClosed();
    // -1: both sides ended as they should; anything else is the stream's reset.
    if (code !== -1) this.exchange?.onDownstreamReset();
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
    // The known length replaces one a filter or local reply may have listed (the encoder skips it).
    const length = contentLength >= 0 && status !== 204 && status !== 304 ? contentLength : -1;
    this.trailers = trailers === true;
    // A known empty body ends the stream with the HEADERS frame; so must a gRPC trailers-only answer.
    this.stream.respond(status, headers, endStream || contentLength === 0, length);
  }

  writeData(chunk: Buffer): boolean {
    return this.stream.write(chunk);
  }

  end(trailers?: readonly string[]): void {
    this.stream.end(this.trailers ? trailers : null);
  }

  reset(): void {
    this.stream.reset(ERROR.INTERNAL_ERROR);
  }

  onExchangeDone(): void {
    this.exchange = null;
    // The exchange disarmed them; a connection that closed takes no more streams.
    if (this.conn.closed) this.timers.close();
    else this.conn.spareTimers.push(this.timers);
  }

  pauseReading(): void {
    this.stream.pause();
  }

  resumeReading(): void {
    this.stream.resume();
  }
}
