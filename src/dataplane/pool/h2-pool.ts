import {
  type ClientEvents,
  ClientSession,
  type ClientStream,
  type ResponseHandler,
} from '../codec/h2/client-session.js';
import { ERROR } from '../codec/h2/frames.js';
import type { Count } from './cluster-traffic.js';
import { upstreamSessionOptions } from './h2-session-options.js';
import { localEnd } from './local-end.js';
import type {
  ConnectionPool,
  PoolContext,
  UpstreamHandler,
  UpstreamRequest,
  UpstreamRequestHead,
} from './types.js';

/**
 * The request's head as the codec sends it: pseudo-fields first, then its fields with a
 * repeated name joined into one (by `, `, cookies by `; ` as RFC 9113 8.2.3 joins them).
 * Built in one array sized for it: a request's fields rarely repeat a name, and an object of
 * them (as node:http2 took headers) cost a dictionary per request.
 */
function requestHead(h: UpstreamRequestHead, scheme: string): string[] {
  const fields = h.headers;
  const head: string[] = new Array(8 + fields.length + 2);
  head[0] = ':method';
  head[1] = h.method;
  head[2] = ':scheme';
  head[3] = scheme;
  head[4] = ':authority';
  head[5] = h.authority;
  head[6] = ':path';
  head[7] = h.path;
  let n = 8;
  next: for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i] as string;
    const value = fields[i + 1] as string;
    for (let j = 8; j < n; j += 2) {
      if (head[j] !== name) continue;
      head[j + 1] = `${head[j + 1]}${name === 'cookie' ? '; ' : ', '}${value}`;
      continue next;
    }
    head[n++] = name;
    head[n++] = value;
  }
  if (h.contentLength >= 0 && h.hasBody) {
    head[n++] = 'content-length';
    head[n++] = String(h.contentLength);
  }
  head.length = n;
  return head;
}

/** One request as an HTTP/2 stream on the host's shared session. */
class H2Request implements UpstreamRequest, ResponseHandler {
  stream: ClientStream | null = null;
  done = false;
  headed = false;
  onWritable: (() => void) | null = null;
  /** Its place in the cluster's pending count while the session connects. */
  pending: Count | null = null;
  /** The session its stream was opened on while that was the pool's current one. */
  session: ClientSession | null = null;
  private ended = false;
  /** Body bytes written: a refused stream is retried only when it sent none. */
  private wrote = false;
  private trailers: readonly string[] | undefined;
  private readonly queued: Buffer[] = [];
  /** A stream a GOAWAY refused was retried once already. */
  private retried = false;
  /** The session its stream is on (the pool may have moved on to another since). */
  private opened: ClientSession | null = null;

  constructor(
    readonly pool: H2Pool,
    readonly head: UpstreamRequestHead,
    readonly handler: UpstreamHandler,
  ) {}

  /** Opens the stream on a connected session. */
  open(session: ClientSession, pc: PoolContext): void {
    if (this.done) return;
    const h = this.head;
    const fields = requestHead(h, pc.connector.tls ? 'https' : 'http');
    const tracked = this.pool.track(session);
    this.session = tracked ? session : null;
    const stream = session.request(fields, !h.hasBody, h.method === 'HEAD', this);
    if (stream.closed) return;
    this.opened = session;
    this.stream = stream;
    // A retried request was ready before: its writes since waited in `queued`.
    if (!this.retried) this.handler.onUpstreamReady(this);
    if (this.queued.length > 0) for (const chunk of this.queued.splice(0)) stream.write(chunk);
    if (this.ended) stream.end(this.trailers);
  }

  write(chunk: Buffer): boolean {
    if (this.done) return true;
    this.pool.traffic.cxTxBytes.add(chunk.length);
    this.wrote = true;
    if (!this.stream) {
      this.queued.push(chunk);
      return true;
    }
    return this.stream.write(chunk);
  }

  end(trailers?: readonly string[]): void {
    this.ended = true;
    this.trailers = trailers;
    if (this.stream && !this.done && this.head.hasBody) this.stream.end(trailers);
  }

  abort(): void {
    if (this.done) return;
    this.done = true;
    this.stream?.reset(ERROR.CANCEL);
    this.pool.forget(this);
  }

  pause(): void {
    this.stream?.pause();
  }

  resume(): void {
    this.stream?.resume();
  }

  localAddress(): string {
    return this.opened ? localEnd(this.opened.socket) : '';
  }

  // ---- the stream's events ----

  onHead(status: number, headers: string[], contentLength: number, endStream: boolean): void {
    if (this.done) return;
    this.headed = true;
    // A head that ends the stream has no body: a gRPC trailers-only answer stays one downstream.
    this.handler.onUpstreamHead(status, headers, contentLength < 0 && endStream ? 0 : contentLength);
  }

  onData(chunk: Buffer): void {
    this.pool.traffic.cxRxBytes.add(chunk.length);
    if (!this.done) this.handler.onUpstreamData(chunk);
  }

  onEnd(trailers: string[] | null): void {
    if (this.done) return;
    this.done = true;
    if (trailers !== null) this.handler.onUpstreamTrailers?.(trailers);
    this.handler.onUpstreamEnd();
  }

  onClose(code: number): void {
    this.pool.untrack(this.session);
    this.session = null;
    if (this.done) return;
    // Above a GOAWAY's last stream: never processed, so sent again once on the next session.
    if (code === ERROR.REFUSED_STREAM && !this.headed && !this.wrote && !this.retried) {
      this.retried = true;
      this.stream = null;
      this.pool.retry(this);
      return;
    }
    this.done = true;
    if (this.headed) this.handler.onUpstreamReset();
    else this.handler.onUpstreamFailure('reset');
  }

  onDrain(): void {
    this.onWritable?.();
  }
}

/**
 * The HTTP/2 pool of one host: one session (the proxy's own HTTP/2 client, on a prior-knowledge
 * or ALPN h2 connection) multiplexing every request, reopened when it closes or receives
 * GOAWAY. Requests wait for the session to connect; the cluster's `max_requests` breaker
 * bounds concurrency, the upstream's SETTINGS the streams open at once.
 */
export class H2Pool implements ConnectionPool {
  private session: ClientSession | null = null;
  private connected = false;
  private waiting: H2Request[] = [];
  private pc: PoolContext;
  private sessionRequests = 0;
  /** Streams open on the current session, for the cluster's idle timeout. */
  private openStreams = 0;
  private idleTimer: NodeJS.Timeout | null = null;

  constructor(pc: PoolContext) {
    this.pc = pc;
  }

  get traffic() {
    return this.pc.traffic;
  }

  request(head: UpstreamRequestHead, handler: UpstreamHandler, pc: PoolContext): UpstreamRequest {
    this.pc = pc;
    const req = new H2Request(this, head, handler);
    const max = pc.cluster.settings.maxRequestsPerConnection;
    if (this.session && max > 0 && this.sessionRequests >= max) {
      pc.traffic.cxMaxRequests.inc();
      this.retire();
    }
    this.send(req);
    return req;
  }

  private send(req: H2Request): void {
    // A session that sent or received GOAWAY takes no new streams, though its socket may linger.
    if (this.session?.closed) this.retire();
    if (!this.session) this.connect();
    this.sessionRequests += 1;
    if (this.connected && this.session) req.open(this.session, this.pc);
    else {
      // Unbounded: the session's streams are bounded by the cluster's max_requests instead.
      req.pending = this.pc.traffic.beginPending(false, this.pc.priority);
      this.waiting.push(req);
    }
  }

  /** A request a GOAWAY refused before the upstream processed it: on the next session. */
  retry(req: H2Request): void {
    this.send(req);
  }

  private connect(): void {
    const pc = this.pc;
    const t = pc.traffic;
    this.sessionRequests = 0;
    this.openStreams = 0;
    this.connected = false;
    const count = t.beginConnection(pc.host, 'http2');
    let session: ClientSession | null = null;
    const socket = pc.connector.connect(pc.host, {
      http2: true,
      onReady: () => {
        if (session === null || this.session !== session) return;
        this.connected = true;
        count.connected();
        this.armIdle();
        for (const req of this.waiting.splice(0)) {
          req.pending?.end();
          req.open(session, this.pc);
        }
      },
    });
    // A malformed response (RFC 9113 8.1.1): counted, then the reference's default (the cluster's
    // stream_error_on_invalid_http_messaging false) ends the whole connection, not only its stream.
    const invalid = () => {
      t.scope.counter('http2.rx_messaging_error').inc();
      if (session && !session.options.streamErrorOnInvalidMessaging)
        session.connectionError(ERROR.PROTOCOL_ERROR);
    };
    const events: ClientEvents = {
      onMalformed: invalid,
      onMessagingError: invalid,
      onTrailerOverflow: () => {},
      // The upstream broke the protocol or flooded us: counted as the reference counts its codec errors.
      onKeepaliveTimeout: () => t.scope.counter('http2.keepalive_timeout').inc(),
      onConnectionError: (_code, flood) => {
        t.cxProtocolError.inc();
        if (flood !== null) t.scope.counter(`http2.${flood}`).inc();
      },
      onGoAway: () => {
        if (this.session === session) this.retire();
      },
      onClose: () => {
        count.end();
        if (this.session !== session) return;
        const wasConnected = this.connected;
        this.session = null;
        this.connected = false;
        if (!wasConnected) {
          t.cxConnectFail.inc();
          for (const req of this.waiting.splice(0)) {
            req.pending?.end();
            req.done = true;
            req.handler.onUpstreamFailure('connect-failure');
          }
        }
      },
    };
    session = new ClientSession(socket, upstreamSessionOptions(pc.connector.options.http2), events);
    this.session = session;
  }

  /** Counts a stream opened on `session` while it is the current one; true when counted. */
  track(session: ClientSession): boolean {
    if (this.session !== session) return false;
    this.openStreams += 1;
    return true;
  }

  /** A stream `track` counted closed (null: it was not counted). */
  untrack(session: ClientSession | null): void {
    if (session === null || this.session !== session) return;
    this.openStreams -= 1;
    if (this.openStreams === 0) this.armIdle();
  }

  /** Starts (or restarts) the cluster's `common_http_protocol_options.idle_timeout`. */
  private armIdle(): void {
    const ms = this.pc.connector.idleTimeoutMs;
    if (ms <= 0) return;
    if (this.idleTimer) this.idleTimer.refresh();
    else this.idleTimer = setTimeout(() => this.onIdleTimeout(), ms).unref();
  }

  private onIdleTimeout(): void {
    if (!this.session || !this.connected || this.openStreams > 0) return;
    this.pc.traffic.cxIdleTimeout.inc();
    this.retire();
  }

  /** Stops sending new streams on the current session; it closes once its streams finish. */
  private retire(): void {
    const s = this.session;
    this.session = null;
    this.connected = false;
    s?.close();
  }

  forget(req: H2Request): void {
    const i = this.waiting.indexOf(req);
    if (i >= 0) {
      this.waiting.splice(i, 1);
      req.pending?.end();
    }
  }

  drain(): void {
    this.retire();
  }

  destroy(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    const s = this.session;
    this.session = null;
    s?.destroy();
  }
}
