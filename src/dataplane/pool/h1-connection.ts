/**
 * One HTTP/1.1 upstream connection on a raw socket and the request on it: writes the request
 * head and body, parses the response as bytes arrive, and tells its pool (`h1-pool.ts`) when
 * it is free again or closed. One request at a time; keep-alive as the server allows.
 */
import type * as net from 'node:net';
import { BodyFramer, Framing } from '../codec/h1-body.js';
import type { ResponseHead } from '../codec/h1-head.js';
import { requestHeadBytes } from '../codec/h1-head-bytes.js';
import { ResponseHeadParser } from '../codec/h1-parse.js';
import { bodilessStatus } from '../codec/h1-status.js';
import { readBegins, readEnds } from '../codec/read-end.js';
import type { ClusterTraffic, ConnectionCount, Count } from './cluster-traffic.js';
import { localEnd } from './local-end.js';
import { TickWrites } from './tick-writes.js';
import type {
  PoolContext,
  UpstreamFailure,
  UpstreamHandler,
  UpstreamRequest,
  UpstreamRequestHead,
} from './types.js';

/** What a connection and its requests tell the pool of their host (`H1Pool`). */
export interface H1ConnectionOwner {
  readonly host: PoolContext['host'];
  readonly maxRequestsPerConnection: number;
  /** A connection became free (fresh or reused). */
  onIdle(conn: H1Connection): void;
  onClosed(conn: H1Connection): void;
  /** A connection attempt failed. */
  onConnectFailure(): void;
  /** A request that waited for a connection was abandoned. */
  forgetPending(req: H1Request): void;
}

const CHUNK_END = Buffer.from('0\r\n\r\n');
const CRLF = '\r\n';

/** One request on an HTTP/1.1 upstream connection, queued while no connection is free. */
export class H1Request implements UpstreamRequest {
  conn: H1Connection | null = null;
  done = false;
  bodyEnded = false;
  responseEnded = false;
  onWritable: (() => void) | null = null;
  readonly chunked: boolean;
  /** Its place in the cluster's pending count while it waits for a connection. */
  pending: Count | null = null;

  constructor(
    readonly pool: H1ConnectionOwner,
    readonly head: UpstreamRequestHead,
    readonly handler: UpstreamHandler,
  ) {
    this.chunked = head.hasBody && head.contentLength < 0;
  }

  write(chunk: Buffer): boolean {
    const conn = this.conn;
    if (!conn || this.done || chunk.length === 0) return true;
    const tick = conn.tick;
    if (tick.holding) {
      if (this.chunked) tick.hold(`${chunk.length.toString(16)}\r\n`);
      tick.hold(chunk);
      if (this.chunked) tick.hold(CRLF);
      return true;
    }
    const s = conn.socket;
    if (this.chunked) {
      s.cork();
      s.write(`${chunk.length.toString(16)}\r\n`, 'latin1');
      s.write(chunk);
      const ok = s.write(CRLF, 'latin1');
      s.uncork();
      return ok;
    }
    return s.write(chunk);
  }

  end(): void {
    if (this.bodyEnded) return;
    this.bodyEnded = true;
    const conn = this.conn;
    if (!conn || this.done) return;
    if (this.chunked) {
      if (conn.tick.holding) conn.tick.hold(CHUNK_END);
      else conn.socket.write(CHUNK_END);
    }
    if (this.responseEnded) conn.finish(this);
  }

  abort(): void {
    if (this.done) return;
    this.done = true;
    if (this.conn) this.conn.destroy(true);
    else this.pool.forgetPending(this);
  }

  pause(): void {
    this.conn?.socket.pause();
  }

  resume(): void {
    this.conn?.socket.resume();
  }

  localAddress(): string {
    return this.conn ? localEnd(this.conn.socket) : '';
  }
}

/** A keep-alive upstream connection: raw socket, one request at a time. */
export class H1Connection {
  readonly socket: net.Socket;
  current: H1Request | null = null;
  connected = false;
  closed = false;
  requests = 0;
  private buf: Buffer | null = null;
  /** The framer of the response being read; null between responses. */
  private framer: BodyFramer | null = null;
  /** One framer reset for every response (`framer` points at it while one is read). */
  private readonly bodyFramer = new BodyFramer(Framing.None, 0);
  /** The request the body bytes being framed go to, and whether they must be copied out. */
  private bodyTo: H1Request | null = null;
  private copyBody = false;
  /** Made once per connection: a closure over both per read was garbage on every response. */
  private readonly deliverBody = (data: Buffer): void => {
    (this.bodyTo as H1Request).handler.onUpstreamData(this.copyBody ? Buffer.from(data) : data);
  };
  private readonly parser = new ResponseHeadParser();
  /** What a request still waiting for its response head is told when the connection closes. */
  private failure: UpstreamFailure = 'reset';
  private keepAlive = true;
  /** Response bytes arrived since the current request was sent. */
  private answered = false;
  private readonly count: ConnectionCount;
  private idleTimer: NodeJS.Timeout | null = null;
  /** The idle timer counts only while this is set (the timer is reused between requests). */
  private idleArmed = false;
  private readonly idleTimeoutMs: number;
  private readonly traffic: ClusterTraffic;
  /**
   * What a request with a body sends in the tick its head goes out, written as one piece at
   * the end of the tick: the head and a body that came with it (or was kept for the try)
   * cost one write, not one per piece.
   */
  readonly tick: TickWrites;

  constructor(
    readonly pool: H1ConnectionOwner,
    pc: PoolContext,
    /** A request this connection was opened for: it goes first, whatever waits in the queue. */
    public reserved: H1Request | null = null,
  ) {
    this.traffic = pc.traffic;
    this.idleTimeoutMs = pc.connector.idleTimeoutMs;
    this.socket = pc.connector.connect(pool.host, {
      onReady: () => this.onConnect(),
      onRead: (chunk, transient) => this.onData(chunk, transient),
    });
    this.tick = new TickWrites(this.socket);
    this.count = this.traffic.beginConnection(pool.host, 'http1');
    this.socket.on('close', () => this.onClose());
    this.socket.on('error', () => {});
    this.socket.on('drain', () => this.current?.onWritable?.());
  }

  private onConnect(): void {
    this.connected = true;
    this.count.connected();
    this.pool.onIdle(this);
  }

  /** Sends a request's head on this connection. */
  assign(req: H1Request): void {
    this.current = req;
    req.conn = this;
    this.requests += 1;
    this.answered = false;
    this.idleArmed = false;
    const h = req.head;
    let framing = '\r\n';
    if (req.chunked) framing = 'transfer-encoding: chunked\r\n\r\n';
    else if (h.hasBody || h.contentLength > 0) framing = `content-length: ${h.contentLength}\r\n\r\n`;
    const max = this.pool.maxRequestsPerConnection;
    if (max > 0 && this.requests >= max) this.keepAlive = false;
    const head = requestHeadBytes(h.method, h.path, h.authority, h.headers, framing);
    this.traffic.cxTxBytes.add(head.length);
    // The body, when it came with the head, is fed in this same tick (after this call).
    if (h.hasBody) this.tick.begin(head);
    else this.socket.write(head);
    req.handler.onUpstreamReady(req);
  }

  /**
   * Response bytes; `transient`: `chunk` is reused after this call, so body bytes are copied
   * out. A downstream head this read set and no body bytes of it took is written at its end.
   */
  private onData(chunk: Buffer, transient: boolean): void {
    readBegins();
    try {
      this.readResponse(chunk, transient);
    } finally {
      readEnds();
    }
  }

  private readResponse(chunk: Buffer, transient: boolean): void {
    this.traffic.cxRxBytes.add(chunk.length);
    const req = this.current;
    if (!req) {
      // Bytes with no request in flight: the server broke framing; the connection is unusable.
      this.destroy(false);
      return;
    }
    this.answered = true;
    const joined = this.buf !== null;
    const buf = joined ? Buffer.concat([this.buf as Buffer, chunk]) : chunk;
    // A joined buffer is our own copy; only the socket's reused one must not be kept.
    const copy = transient && !joined;
    this.buf = null;
    let off = 0;
    while (off < buf.length && this.current === req && !req.done) {
      if (!this.framer) {
        const head = this.parser.feed(buf, off);
        off += this.parser.used;
        if (this.parser.error) {
          this.protocolError();
          return;
        }
        if (!head) return;
        // This pool never asks for an upgrade (tunnels dial their own connection): a 101 is
        // unsolicited, and what follows it is another protocol, never a response to parse.
        if (head.status === 101) {
          this.protocolError();
          return;
        }
        if (head.status < 200) continue; // 100 Continue and other interim answers are not forwarded.
        if (this.startResponse(req, head)) this.endResponse(req, off < buf.length);
        continue;
      }
      this.bodyTo = req;
      this.copyBody = copy;
      off += this.framer.feed(buf, off, this.deliverBody);
      // A parked connection would hold the finished request, and through it its whole
      // exchange, until its next request: past a young-generation collection, so copied.
      this.bodyTo = null;
      if (this.framer.error) {
        this.protocolError();
        return;
      }
      if (this.framer.done) this.endResponse(req, off < buf.length);
    }
    if (off < buf.length && this.current === req && !req.done)
      this.buf = copy ? Buffer.from(buf.subarray(off)) : buf.subarray(off);
  }

  /** Starts forwarding a response; true when it has no body to wait for. */
  private startResponse(req: H1Request, head: ResponseHead): boolean {
    const { status, headers, contentLength } = head;
    for (let i = 0; i < headers.length; i += 2) {
      if (headers[i] === 'connection' && /close/i.test(headers[i + 1] as string)) this.keepAlive = false;
    }
    if (head.version === 'HTTP/1.0') this.keepAlive = false;
    let framing: Framing;
    if (req.head.method === 'HEAD' || bodilessStatus(status)) framing = Framing.None;
    else if (head.chunked) framing = Framing.Chunked;
    else if (contentLength >= 0) framing = Framing.Length;
    else {
      framing = Framing.UntilClose;
      this.keepAlive = false;
    }
    this.framer = this.bodyFramer.reset(framing, contentLength);
    // A HEAD answer keeps the length the GET would have, so it is passed on as sent.
    const answersHead = req.head.method === 'HEAD' && !bodilessStatus(status);
    req.handler.onUpstreamHead(
      status,
      headers,
      framing === Framing.Length || answersHead ? contentLength : framing === Framing.None ? 0 : -1,
    );
    return this.framer.done;
  }

  /**
   * The response is complete. The connection is released (reused or closed) before the
   * handler hears of it, so the next request the handler starts (a pipelined one) can reuse
   * it. `more`: bytes followed the response, which no request can own.
   */
  private endResponse(req: H1Request, more: boolean): void {
    if (req.done) return; // the handler gave up on it when the head came
    this.framer = null;
    req.responseEnded = true;
    // A response that ends before the request body cannot leave the connection reusable.
    if (more || !req.bodyEnded) this.keepAlive = false;
    this.finish(req);
    req.handler.onUpstreamEnd();
  }

  /** The pool parked this connection: close it after the cluster's idle timeout. */
  parkIdle(): void {
    const ms = this.idleTimeoutMs;
    if (ms <= 0) return;
    this.idleArmed = true;
    if (this.idleTimer) this.idleTimer.refresh();
    else this.idleTimer = setTimeout(() => this.onIdleTimeout(), ms).unref();
  }

  private onIdleTimeout(): void {
    if (!this.idleArmed || this.current || this.closed) return;
    this.traffic.cxIdleTimeout.inc();
    this.destroy(true);
  }

  /** Both directions of `req` are complete: reuse or close. */
  finish(req: H1Request): void {
    if (this.current !== req) return;
    req.done = true;
    this.current = null;
    req.conn = null;
    if (!this.keepAlive || this.buf) {
      if (this.pool.maxRequestsPerConnection > 0 && this.requests >= this.pool.maxRequestsPerConnection)
        this.traffic.cxMaxRequests.inc();
      this.destroy(true);
      return;
    }
    // A response that ended while a slow client had its reading paused leaves the socket
    // paused, and nothing resumes it once the exchange is over: the next request on this
    // connection would never be read.
    if (this.socket.isPaused()) this.socket.resume();
    this.pool.onIdle(this);
  }

  private protocolError(): void {
    this.traffic.cxProtocolError.inc();
    this.failure = 'protocol-error';
    this.destroy(true);
  }

  /** Closes the connection; `local` tells the close stats who ended it. */
  destroy(local: boolean): void {
    if (this.closed) return;
    (local ? this.traffic.cxDestroyLocal : this.traffic.cxDestroyRemote).inc();
    this.closeWith(local);
    this.socket.destroy();
  }

  private onClose(): void {
    if (!this.closed) (this.connected ? this.traffic.cxDestroyRemote : this.traffic.cxConnectFail).inc();
    this.closeWith(false);
  }

  private closeWith(local: boolean): void {
    if (this.closed) return;
    this.closed = true;
    this.tick.drop();
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.count.end();
    const req = this.current;
    this.current = null;
    this.pool.onClosed(this);
    if (!this.connected) {
      const reserved = this.reserved;
      this.reserved = null;
      if (!reserved) this.pool.onConnectFailure();
      else if (!reserved.done) {
        reserved.done = true;
        reserved.handler.onUpstreamFailure('connect-failure');
      }
      return;
    }
    if (req && !req.done) {
      req.done = true;
      req.conn = null;
      this.traffic.cxDestroyWithActiveRq.inc();
      if (this.framer && this.framer.framing === Framing.UntilClose && !local) {
        // A close-delimited body ends with the connection.
        req.responseEnded = true;
        req.handler.onUpstreamEnd();
      } else if (this.framer || req.responseEnded) req.handler.onUpstreamReset();
      else if (this.failure === 'reset' && this.requests > 1 && !this.answered) {
        // The server closed a kept-alive connection as the request went out on it.
        req.handler.onUpstreamFailure('reused-reset');
      } else req.handler.onUpstreamFailure(this.failure);
    }
  }
}
