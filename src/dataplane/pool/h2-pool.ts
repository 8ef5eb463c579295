import * as http2 from 'node:http2';
import { hostKey } from '../../../reducers/settings/endpoints.js';
import { upstreamH2Settings } from '../codec/h2-client-settings.js';
import { withFlatHeaders } from '../codec/h2-headers.js';
import type { Count } from './cluster-traffic.js';
import type {
  ConnectionPool,
  PoolContext,
  UpstreamHandler,
  UpstreamRequest,
  UpstreamRequestHead,
} from './types.js';

const { NGHTTP2_CANCEL, NGHTTP2_FLAG_END_STREAM } = http2.constants;

/** A received header block as a flat `[name, value, ...]` list, pseudo headers left out. */
function flatHeaders(hs: http2.IncomingHttpHeaders): string[] {
  const flat: string[] = [];
  for (const name in hs) {
    const value = hs[name];
    if (name.charCodeAt(0) === 58 || value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) flat.push(name, v);
    else flat.push(name, String(value));
  }
  return flat;
}

/** The request a client stream carries, for the listeners every stream shares. */
const REQUEST = Symbol('h2 pool request');
type RequestStream = http2.ClientHttp2Stream & { [REQUEST]: H2Request };

/*
 * One function per event for every stream (`this` is the stream), not closures per stream:
 * an upstream stream lives as long as its request, and with a hundred requests in flight
 * what each one holds is copied at every scavenge.
 */
function onResponse(this: RequestStream, hs: http2.IncomingHttpHeaders, flags: number): void {
  this[REQUEST].onResponse(hs, flags);
}
function onTrailers(this: RequestStream, hs: http2.IncomingHttpHeaders): void {
  const req = this[REQUEST];
  if (!req.done) req.handler.onUpstreamTrailers?.(flatHeaders(hs));
}
function onData(this: RequestStream, chunk: Buffer): void {
  const req = this[REQUEST];
  req.pool.traffic.cxRxBytes.add(chunk.length);
  if (!req.done) req.handler.onUpstreamData(chunk);
}
function onEnd(this: RequestStream): void {
  const req = this[REQUEST];
  if (req.done) return;
  req.done = true;
  if (req.headed) req.handler.onUpstreamEnd();
  else req.handler.onUpstreamFailure('reset');
}
function onClose(this: RequestStream): void {
  const req = this[REQUEST];
  req.pool.untrack(req.session);
  if (req.done) return;
  req.done = true;
  if (req.headed) req.handler.onUpstreamReset();
  else req.handler.onUpstreamFailure('reset');
}
function onDrain(this: RequestStream): void {
  this[REQUEST].onWritable?.();
}
function onWantTrailers(this: RequestStream): void {
  this.sendTrailers(outgoing(this[REQUEST].trailers));
}
/** A stream's 'error' is followed by its 'close', which is what the handler hears. */
function ignoreError(): void {}

const NO_TRAILERS: readonly string[] = [];

/** A flat `[name, value, ...]` list as node:http2 sends it, repeated names joined by `, `. */
function outgoing(flat: readonly string[], into: http2.OutgoingHttpHeaders = {}): http2.OutgoingHttpHeaders {
  return withFlatHeaders(into, flat, ', ');
}

/** One request as an HTTP/2 stream on the host's shared session. */
class H2Request implements UpstreamRequest {
  stream: http2.ClientHttp2Stream | null = null;
  done = false;
  headed = false;
  onWritable: (() => void) | null = null;
  /** Its place in the cluster's pending count while the session connects. */
  pending: Count | null = null;
  /** The session its stream was opened on while that was the pool's current one. */
  session: http2.ClientHttp2Session | null = null;
  private ended = false;
  private drainWatched = false;
  /** The request's trailers, for `wantTrailers` (none: an empty DATA frame ends the stream). */
  trailers: readonly string[] = NO_TRAILERS;
  private readonly queued: Buffer[] = [];

  constructor(
    readonly pool: H2Pool,
    readonly head: UpstreamRequestHead,
    readonly handler: UpstreamHandler,
  ) {}

  /** Opens the stream on a connected session. */
  open(session: http2.ClientHttp2Session, pc: PoolContext): void {
    if (this.done) return;
    const h = this.head;
    const headers = outgoing(h.headers, {
      ':method': h.method,
      ':path': h.path,
      ':authority': h.authority,
      ':scheme': pc.connector.tls ? 'https' : 'http',
    });
    if (h.contentLength >= 0 && h.hasBody) headers['content-length'] = String(h.contentLength);
    let stream: http2.ClientHttp2Stream;
    try {
      stream = session.request(headers, { endStream: !h.hasBody, waitForTrailers: h.trailers === true });
    } catch {
      this.done = true;
      this.handler.onUpstreamFailure('reset');
      return;
    }
    this.stream = stream;
    (stream as RequestStream)[REQUEST] = this;
    if (this.pool.track(session)) this.session = session;
    stream.on('response', onResponse);
    if (this.handler.onUpstreamTrailers !== undefined) stream.on('trailers', onTrailers);
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('close', onClose);
    stream.on('error', ignoreError);
    if (h.trailers === true) stream.once('wantTrailers', onWantTrailers);
    this.handler.onUpstreamReady(this);
    for (const chunk of this.queued.splice(0)) stream.write(chunk);
    if (this.ended) stream.end();
  }

  write(chunk: Buffer): boolean {
    if (this.done) return true;
    this.pool.traffic.cxTxBytes.add(chunk.length);
    if (!this.stream) {
      this.queued.push(chunk);
      return true;
    }
    if (this.stream.write(chunk)) return true;
    if (!this.drainWatched) {
      // Watched from the first full buffer on: most requests never fill it.
      this.drainWatched = true;
      this.stream.on('drain', onDrain);
    }
    return false;
  }

  onResponse(hs: http2.IncomingHttpHeaders, flags: number): void {
    const status = Number(hs[':status']);
    if (status < 200) return;
    this.headed = true;
    const cl = hs['content-length'];
    // A head that ends the stream has no body: a gRPC trailers-only answer stays one downstream.
    const length = cl !== undefined ? Number(cl) : flags & NGHTTP2_FLAG_END_STREAM ? 0 : -1;
    this.handler.onUpstreamHead(status, flatHeaders(hs), length);
  }

  end(trailers?: readonly string[]): void {
    this.ended = true;
    if (trailers !== undefined) this.trailers = trailers;
    if (this.stream && !this.done && this.head.hasBody) this.stream.end();
  }

  abort(): void {
    if (this.done) return;
    this.done = true;
    this.stream?.close(NGHTTP2_CANCEL);
    this.pool.forget(this);
  }

  pause(): void {
    this.stream?.pause();
  }

  resume(): void {
    this.stream?.resume();
  }
}

/**
 * The HTTP/2 pool of one host: one prior-knowledge (h2c) session multiplexing every
 * request, reopened when it closes or receives GOAWAY. Requests wait for the session to
 * connect; the cluster's `max_requests` breaker bounds concurrency.
 */
export class H2Pool implements ConnectionPool {
  private session: http2.ClientHttp2Session | null = null;
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
    if (!this.session) this.connect();
    this.sessionRequests += 1;
    if (this.connected && this.session) req.open(this.session, pc);
    else {
      // Unbounded: the session's streams are bounded by the cluster's max_requests instead.
      req.pending = pc.traffic.beginPending(false, pc.priority);
      this.waiting.push(req);
    }
    return req;
  }

  private connect(): void {
    const pc = this.pc;
    const t = pc.traffic;
    const host = pc.host;
    this.sessionRequests = 0;
    this.openStreams = 0;
    this.connected = false;
    const options = pc.connector.options.http2;
    const session = http2.connect(`http://${hostKey(host.ip, host.port)}`, {
      settings: upstreamH2Settings(options.settings),
      createConnection: () => pc.connector.connect(host, { http2: true }),
    });
    this.session = session;
    const count = t.beginConnection(host, 'http2');
    session.on('connect', () => {
      if (this.session !== session) return;
      // The session's handle exists from here on: before, the window cannot be set.
      if (options.connectionWindowSize !== null) session.setLocalWindowSize(options.connectionWindowSize);
      this.connected = true;
      count.connected();
      this.armIdle();
      for (const req of this.waiting.splice(0)) {
        req.pending?.end();
        req.open(session, this.pc);
      }
    });
    session.on('goaway', () => {
      if (this.session === session) this.retire();
    });
    session.on('error', () => {});
    session.on('close', () => {
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
    });
  }

  /** Counts a stream opened on `session` while it is the current one; true when counted. */
  track(session: http2.ClientHttp2Session): boolean {
    if (this.session !== session) return false;
    this.openStreams += 1;
    return true;
  }

  /** A stream `track` counted closed (null: it was not counted). */
  untrack(session: http2.ClientHttp2Session | null): void {
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
