import type { Scope } from '../../stats/store.js';
import { flatValue, GrpcStatTracker, type GrpcStream, type HoldLimit, isGrpcContentType } from './grpc.js';
import { type HttpRequest, headerValue, type ResponseSink, setHeader } from '../codec/request.js';

/** A `grpc-status` the reference reads as OK: an integer equal to 0. */
const DIGITS = /^\d+$/;

/**
 * The `grpc_http1_bridge` filter's side of one gRPC request. Over HTTP/1.x (whose clients
 * cannot read trailers) it holds the response head and body until the upstream's trailers
 * come, copies their `grpc-status` and `grpc-message` into the head, turns the status into
 * 503 when `grpc-status` is not 0, and sets the length of what it held. A head that ends the
 * response (trailers-only) passes unchanged, as a response that ends without trailers does.
 * Over HTTP/2 it only counts.
 */
class BridgeStream implements GrpcStream, ResponseSink {
  private started = false;
  /** The held head while bridging, until the trailers or the end. */
  private head: { status: number; headers: string[] } | null = null;
  private held: Buffer[] = [];
  private heldBytes = 0;
  /** The held head went out ending the response (it had no body): nothing more to end. */
  private closed = false;

  constructor(
    private readonly inner: ResponseSink,
    private readonly stats: GrpcStatTracker | null,
    private readonly bridging: boolean,
    private readonly hold: HoldLimit,
  ) {}

  get sink(): ResponseSink {
    return this;
  }

  requestBody(chunk: Buffer): Buffer {
    return chunk;
  }

  requestEnd(): boolean {
    return true;
  }

  get headersSent(): boolean {
    return this.started || this.inner.headersSent;
  }

  writeHead(
    status: number,
    headers: string[],
    contentLength: number,
    endStream: boolean,
    trailers?: boolean,
  ): void {
    this.started = true;
    this.stats?.charge(headers);
    if (this.bridging && !endStream) this.head = { status, headers };
    else this.inner.writeHead(status, headers, contentLength, endStream, trailers);
  }

  writeData(chunk: Buffer): boolean {
    if (this.head === null) return this.inner.writeData(chunk);
    this.held.push(chunk);
    this.heldBytes += chunk.length;
    if (this.heldBytes > this.hold.bufferLimit) {
      // As the reference's bridge, which buffers under the connection's limit: nothing went
      // out yet, so the answer is the proxy's own 500 (a stream held here grew without end).
      this.head = null;
      this.held = [];
      this.heldBytes = 0;
      this.started = false;
      this.hold.encodeTooLarge();
    }
    return true;
  }

  trailers(trailers: string[]): number {
    this.stats?.charge(trailers);
    const head = this.head;
    if (head === null) return 0;
    const status = flatValue(trailers, 'grpc-status');
    if (status !== undefined) {
      if (!DIGITS.test(status) || Number(status) !== 0) head.status = 503;
      setHeader(head.headers, 'grpc-status', status);
    }
    const message = flatValue(trailers, 'grpc-message');
    if (message !== undefined) setHeader(head.headers, 'grpc-message', message);
    // Sent now, so a filter nearer the client (grpc_web) sees the body before the trailers.
    this.flush();
    return head.status;
  }

  end(trailers?: readonly string[]): void {
    if (this.head !== null) this.flush();
    // Over HTTP/2 the client reads the trailers themselves.
    if (!this.closed) this.inner.end(this.bridging ? undefined : trailers);
  }

  reset(): void {
    this.head = null;
    this.held = [];
    this.inner.reset();
  }

  /** Sends the held head and body, with the body's length. */
  private flush(): void {
    const head = this.head as { status: number; headers: string[] };
    this.head = null;
    this.closed = this.heldBytes === 0;
    this.inner.writeHead(head.status, head.headers, this.heldBytes, this.closed);
    for (const chunk of this.held) this.inner.writeData(chunk);
    this.held = [];
  }
}

/**
 * The bridge for `req` when it is a gRPC request (`application/grpc[+codec]`), else null;
 * `scope` gives the routed cluster's stats scope once the route is known; `hold` bounds the
 * response it holds for an HTTP/1 client.
 */
export function grpcBridgeStream(
  req: HttpRequest,
  sink: ResponseSink,
  scope: () => Scope | null,
  hold: HoldLimit,
): GrpcStream | null {
  if (!isGrpcContentType(headerValue(req, 'content-type'))) return null;
  const stats = GrpcStatTracker.forPath('grpc', req.path, scope);
  return new BridgeStream(sink, stats, req.protocol !== 'HTTP/2', hold);
}
