import { H1Connection, type H1ConnectionOwner, H1Request } from './h1-connection.js';
import type {
  ConnectionPool,
  PoolContext,
  UpstreamHandler,
  UpstreamRequest,
  UpstreamRequestHead,
} from './types.js';

/**
 * The HTTP/1.1 pool of one host: a stack of idle keep-alive connections (the most recently
 * used first, as it is the least likely to have been closed by the server) and a queue of
 * requests waiting for one. Connection count is bounded by the cluster's `max_connections`.
 */
export class H1Pool implements ConnectionPool, H1ConnectionOwner {
  private readonly idle: H1Connection[] = [];
  private readonly pending: H1Request[] = [];
  private readonly all = new Set<H1Connection>();
  private connecting = 0;
  maxRequestsPerConnection = 0;
  private pc: PoolContext;
  private draining = false;

  constructor(pc: PoolContext) {
    this.pc = pc;
  }

  get host() {
    return this.pc.host;
  }

  request(
    head: UpstreamRequestHead,
    handler: UpstreamHandler,
    pc: PoolContext,
    fresh = false,
  ): UpstreamRequest {
    this.pc = pc;
    this.draining = false;
    this.maxRequestsPerConnection = pc.cluster.settings.maxRequestsPerConnection;
    const req = new H1Request(this, head, handler);
    const t = pc.traffic;
    if (fresh && t.connectionAllowed) {
      this.all.add(new H1Connection(this, pc, req));
      return req;
    }
    const conn = this.idle.pop();
    if (conn) {
      conn.assign(req);
      return req;
    }
    req.pending = t.beginPending(true, pc.priority);
    if (!req.pending) {
      req.done = true;
      queueMicrotask(() => handler.onUpstreamFailure('overflow'));
      return req;
    }
    this.pending.push(req);
    this.grow();
    return req;
  }

  /** Opens a connection if requests wait for more than are being opened and the breaker allows. */
  private grow(): void {
    if (this.pending.length <= this.connecting) return;
    if (!this.pc.traffic.admitConnection()) return;
    this.connecting += 1;
    this.all.add(new H1Connection(this, this.pc));
  }

  forgetPending(req: H1Request): void {
    const i = this.pending.indexOf(req);
    if (i >= 0) {
      this.pending.splice(i, 1);
      req.pending?.end();
    }
  }

  /** A connection became free (fresh or reused). */
  onIdle(conn: H1Connection): void {
    const reserved = conn.reserved;
    if (reserved) {
      conn.reserved = null;
      if (!reserved.done) {
        conn.assign(reserved);
        return;
      }
    } else if (conn.requests === 0) this.connecting -= 1;
    const next = this.pending.shift();
    if (next) {
      next.pending?.end();
      conn.assign(next);
      return;
    }
    if (this.draining) {
      conn.destroy(true);
      return;
    }
    this.idle.push(conn);
    conn.parkIdle();
  }

  onClosed(conn: H1Connection): void {
    this.all.delete(conn);
    const i = this.idle.indexOf(conn);
    if (i >= 0) this.idle.splice(i, 1);
    if (conn.connected) this.grow();
  }

  /** A connection attempt failed: the oldest waiting request fails with it. */
  onConnectFailure(): void {
    this.connecting -= 1;
    const req = this.pending.shift();
    if (!req) return;
    req.pending?.end();
    req.done = true;
    req.handler.onUpstreamFailure('connect-failure');
  }

  drain(): void {
    this.draining = true;
    for (const conn of this.idle.splice(0)) conn.destroy(true);
  }

  destroy(): void {
    for (const conn of [...this.all]) conn.destroy(true);
  }
}
