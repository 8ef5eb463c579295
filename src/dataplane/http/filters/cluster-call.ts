/**
 * One buffered request from a filter to a service cluster (an authorizer, a rate limit
 * service), through this build's own upstream pools, so the service cluster's balancer,
 * breakers and stats count it like any request. The answer is collected whole, up to a
 * bound, and handed to one callback exactly once: a peer that hangs, closes, resets or sends
 * too much ends as a failure, never as an exception.
 */
import type { ClusterLookup, ClusterTraffic, RequestCount } from '../../pool/cluster-traffic.js';
import { poolFor } from '../../pool/index.js';
import type { PoolContext, UpstreamHandler, UpstreamRequest } from '../../pool/types.js';

/** What a filter sends. */
export interface ClusterCallRequest {
  cluster: string;
  method: string;
  path: string;
  authority: string;
  /** Flat `[name, value, ...]`, lowercase names. */
  headers: string[];
  body: Buffer;
  /** 0: no timeout of its own (the caller bounds it). */
  timeoutMs: number;
  /** Asks for HTTP/2 (gRPC); the cluster's `http2_protocol_options` decides as for any request. */
  http2: boolean;
}

/** Why a call got no whole answer. */
export type CallFailure =
  | 'no-cluster'
  | 'no-host'
  | 'overflow'
  | 'timeout'
  | 'failure'
  | 'reset'
  | 'too-large';

export type CallResult =
  | { ok: true; status: number; headers: string[]; body: Buffer; trailers: string[] }
  | { ok: false; reason: CallFailure };

/** The largest answer a service may send; more is a failure (a hostile peer cannot grow memory). */
export const MAX_ANSWER_BYTES = 1 << 20;

/** A call in flight; `cancel` (the request ended first) drops it without calling back. */
export interface ClusterCall {
  cancel(): void;
}

/** Sends `request` to a host of its cluster; `done` is called once, later, unless cancelled. */
export function callCluster(
  clusters: ClusterLookup,
  request: ClusterCallRequest,
  done: (result: CallResult) => void,
): ClusterCall {
  const call = new Call(request, done);
  const cluster = clusters.get(request.cluster);
  if (!cluster) return call.failSoon('no-cluster');
  const traffic = cluster.traffic as ClusterTraffic;
  const host = cluster.lb.choose({ hash: null, attempt: 0, criteria: null, originalDst: null });
  if (!host) {
    traffic.cxNoneHealthy.inc();
    return call.failSoon('no-host');
  }
  if (!traffic.admitRequest()) return call.failSoon('overflow');
  const pc: PoolContext = { cluster, host, traffic, connector: traffic.connector };
  call.count = traffic.beginRequest(host);
  call.arm();
  const upstream = poolFor(pc, request.http2).request(
    {
      method: request.method,
      path: request.path,
      authority: request.authority,
      headers: request.headers,
      contentLength: request.body.length,
      hasBody: request.body.length > 0,
    },
    call,
    pc,
  );
  call.upstream ??= upstream;
  return call;
}

class Call implements UpstreamHandler, ClusterCall {
  upstream: UpstreamRequest | null = null;
  count: RequestCount | null = null;
  private status = 0;
  private headers: string[] = [];
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private trailers: string[] = [];
  private finished = false;
  private cancelled = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly request: ClusterCallRequest,
    private readonly done: (result: CallResult) => void,
  ) {}

  /** A failure found before sending. */
  failSoon(reason: CallFailure): this {
    this.finish({ ok: false, reason });
    return this;
  }

  arm(): void {
    if (this.request.timeoutMs > 0)
      this.timer = setTimeout(() => this.fail('timeout'), this.request.timeoutMs);
  }

  cancel(): void {
    this.cancelled = true;
    if (this.finished) return;
    this.finished = true;
    this.release();
    this.upstream?.abort();
  }

  private fail(reason: CallFailure): void {
    if (this.finished) return;
    this.upstream?.abort();
    this.finish({ ok: false, reason });
  }

  private finish(result: CallResult): void {
    if (this.finished) return;
    this.finished = true;
    this.release();
    // Never inside callCluster or a pool callback: the caller may not hold the call yet, and
    // its reaction (a local reply, the next filter) must not run inside the pool's stack.
    queueMicrotask(() => {
      if (!this.cancelled) this.done(result);
    });
  }

  private release(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.count?.end(this.status);
    this.count = null;
  }

  onUpstreamReady(up: UpstreamRequest): void {
    this.upstream = up;
    if (this.request.body.length > 0) up.write(this.request.body);
    up.end();
  }
  onUpstreamFailure(): void {
    this.finish({ ok: false, reason: 'failure' });
  }
  onUpstreamHead(status: number, headers: string[]): void {
    this.status = status;
    this.headers = headers;
  }
  onUpstreamData(chunk: Buffer): void {
    this.size += chunk.length;
    if (this.size > MAX_ANSWER_BYTES) this.fail('too-large');
    else this.chunks.push(chunk);
  }
  onUpstreamTrailers(trailers: string[]): void {
    this.trailers = trailers;
  }
  onUpstreamEnd(): void {
    this.finish({
      ok: true,
      status: this.status,
      headers: this.headers,
      body: Buffer.concat(this.chunks),
      trailers: this.trailers,
    });
  }
  onUpstreamReset(): void {
    this.finish({ ok: false, reason: 'reset' });
  }
}
