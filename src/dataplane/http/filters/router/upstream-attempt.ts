import type { MetadataCriteria } from '../../../../upstream/lb/criteria.js';
import { failsHealthChecksAtOnce, IMMEDIATE_HEALTH_CHECK_FAIL } from '../../../../upstream/outcomes.js';
import type { ClusterRuntime, UpstreamHost } from '../../../../upstream/types.js';
import { FLAG, type StreamInfo } from '../../../access-log/stream-info.js';
import type { HttpRequest, ResponseSink } from '../../../codec/request.js';
import type { ClusterTraffic, Count, RequestCount } from '../../../pool/cluster-traffic.js';
import { H2Pool } from '../../../pool/h2-pool.js';
import { poolFor } from '../../../pool/index.js';
import type {
  PoolContext,
  UpstreamFailure,
  UpstreamHandler,
  UpstreamRequest,
  UpstreamRequestHead,
} from '../../../pool/types.js';
import { applyHeaderMutations, type HeaderMutation } from '../../../router/header-mutation.js';
import {
  backOffMs,
  idempotentMethod,
  type RetryPolicy,
  retriableFailure,
  retriableGrpc,
  retriableStatus,
} from '../../../router/retry.js';
import type { CompiledRoute } from '../../../router/table.js';
import { RESET_DETAILS, RESET_FLAG, RESET_REASON, upstreamResetText } from '../../local-reply.js';
import type { TimerTarget } from '../../stream-timer.js';
import type { StreamTimers } from '../../stream-timers.js';
import type { RouterOptions } from '../chain.js';
import { RequestBody } from './request-body.js';

/** What an upstream attempt needs of its downstream stream (the exchange, src/dataplane/http/exchange.ts). */
export interface AttemptStream {
  readonly req: HttpRequest;
  readonly info: StreamInfo;
  /** True once the request was answered or reset: every callback after it is ignored. */
  readonly ended: boolean;
  /** The downstream's response: once its head went, it is too late to retry or to answer locally. */
  readonly sink: ResponseSink;
  /** The status the downstream response ends with (a gRPC filter may change it at the trailers). */
  readonly responseStatus: number;
  /** The stream's timers (src/dataplane/http/stream-timers.ts), the route's `timeout` among them. */
  readonly timers: StreamTimers;
  /** Flow control of the downstream's request body. */
  readonly owner: { pauseReading(): void; resumeReading(): void };
  /** The upstream response, chosen (no retry follows it), on its way downstream. */
  upstreamHead(status: number, headers: string[], contentLength: number): void;
  upstreamData(chunk: Buffer): void;
  upstreamTrailers(trailers: string[]): void;
  upstreamEnd(): void;
  /** The proxy's own answer, or a reset once the response has started. */
  reply(status: number, text: string | Buffer, headers?: string[]): void;
  resetDownstream(): void;
}

const OVERLOADED = ['x-proxy-overloaded', 'true'];

/**
 * A routed request's way to its cluster: each try on a host the balancer chooses, the
 * per-try timeout, the retry policy's decisions with their back-off and the retry breaker,
 * the request body kept for another try, and the chosen response relayed to the stream.
 * Made by the router filter (route.ts) once it has the cluster; the pools call it back as
 * the `UpstreamHandler`, and the route timer as its `TimerTarget`.
 */
export class UpstreamAttempt implements UpstreamHandler, TimerTarget {
  readonly traffic: ClusterTraffic;
  /** The request as it goes upstream; the route's request mutations are applied per host. */
  head: UpstreamRequestHead | null = null;
  retry: RetryPolicy | null = null;
  /** The whole request's timeout (the route's, or an internal caller's header); 0 for none. */
  timeoutMs = 0;
  /** Each try's timeout; 0 for none. */
  perTryMs = 0;
  /** What a timeout answers: 504, or 204 when an internal caller asked for it. */
  timeoutStatus = 504;
  hash: bigint | null = null;
  criteria: MetadataCriteria | null = null;
  /** ORIGINAL_DST: the destination the request's header or its connection names. */
  originalDst: string | null = null;
  /** The header mutations that apply, most specific first; empty when none. */
  mutations: readonly HeaderMutation[];
  /** The client reads trailers and the current try's upstream (HTTP/2) can send them. */
  trailersExpected = false;
  /** The host of the current try; null between tries. */
  private host: UpstreamHost | null = null;
  /** The host of the latest try, kept after it ends for the response's header variables. */
  private lastHost: UpstreamHost | null = null;
  /** The current try in its cluster's and host's counts. */
  private count: RequestCount | null = null;
  private upstream: UpstreamRequest | null = null;
  private upstreamReady = false;
  /** Retries made so far. */
  private retries = 0;
  /** The retry breaker slot this request holds from its first retry to its end. */
  private retrySlot: Count | null = null;
  private tryTimer: NodeJS.Timeout | null = null;
  /** One resend after a reused connection failed is left; idempotent methods only (RFC 9110 9.2.2). */
  private resendable: boolean;
  private upstreamPaused = false;
  /** The request body for the upstream (kept for another try while it fits); null without a body. */
  private readonly body: RequestBody | null;
  /** The router has the request's end (the downstream sent it, and the filters passed it on). */
  private bodyEnded: boolean;
  /** The downstream request's trailers (HTTP/2), for the end of the upstream request. */
  private requestTrailers: string[] | undefined = undefined;

  constructor(
    private readonly stream: AttemptStream,
    readonly route: CompiledRoute,
    readonly cluster: ClusterRuntime<ClusterTraffic>,
    private readonly router: RouterOptions,
  ) {
    this.traffic = cluster.traffic;
    this.mutations = route.mutations;
    const req = stream.req;
    this.bodyEnded = !req.hasBody;
    this.resendable = idempotentMethod(req.method);
    this.body = req.hasBody ? new RequestBody(cluster.settings.perConnectionBufferLimitBytes) : null;
  }

  /** The first try, once the router filled in the head, the policy and the timeouts. */
  begin(): void {
    if (this.bodyEnded) this.armTimeout();
    this.startTry(false);
  }

  // ---- the request body, past the filters ----

  /** Request body bytes: to the upstream, or kept until it is ready. */
  data(chunk: Buffer): void {
    const body = this.body as RequestBody;
    const up = this.upstreamReady ? this.upstream : null;
    if (body.add(chunk, up !== null)) this.stream.owner.pauseReading();
    if (up !== null && !up.write(chunk)) this.stream.owner.pauseReading();
  }

  /** The request's end, with its trailers (HTTP/2) if it has them. */
  end(trailers: string[] | undefined): void {
    this.bodyEnded = true;
    this.requestTrailers = trailers;
    if (this.head) this.armTimeout();
    if (this.upstreamReady && this.upstream) this.upstream.end(trailers);
  }

  // ---- flow control of the response ----

  pause(): void {
    if (this.upstreamPaused) return;
    this.upstreamPaused = true;
    this.upstream?.pause();
  }

  resume(): void {
    if (!this.upstreamPaused) return;
    this.upstreamPaused = false;
    this.upstream?.resume();
  }

  // ---- the end, from the stream's side ----

  /** The stream is answered from elsewhere (a filter, a gRPC refusal): the current try is dropped. */
  drop(): void {
    this.endTry(0);
    this.upstream?.abort();
    this.upstream = null;
  }

  /** The downstream went away or timed out: the upstream is reset, counted as a reset sent. */
  cancel(): void {
    if (this.upstream) {
      this.traffic.rqTxReset.inc();
      this.upstream.abort();
      this.upstream = null;
    }
    this.endTry(0);
  }

  /** The request is over: nothing more is scheduled, and the retry breaker slot goes back. */
  finish(): void {
    if (this.tryTimer) clearTimeout(this.tryTimer);
    this.tryTimer = null;
    this.retrySlot?.end();
  }

  // ---- tries ----

  /** Sends the request to a host; `fresh` asks the pool for a new connection. */
  private startTry(fresh: boolean): void {
    const cluster = this.cluster;
    const t = this.traffic;
    const priority = this.route.priority;
    if (!t.admitRequest(priority)) {
      this.upstreamLocalReply(503, 'overflow');
      return;
    }
    const host = cluster.lb.choose({
      hash: this.hash,
      attempt: this.retries,
      criteria: this.criteria,
      originalDst: this.originalDst,
    });
    if (!host) {
      t.cxNoneHealthy.inc();
      this.stream.info.flags |= FLAG.UH;
      this.stream.info.details = 'no_healthy_upstream';
      this.stream.reply(503, 'no healthy upstream');
      return;
    }
    this.host = host;
    this.lastHost = host;
    this.stream.info.upstreamHost = host.address;
    this.count = t.beginRequest(host, priority);
    this.upstreamReady = false;
    this.body?.rewind();
    const pc: PoolContext = { cluster, host, traffic: t, connector: t.connector, priority };
    const perTry = this.perTryMs;
    if (perTry > 0) this.tryTimer = setTimeout(() => this.onTimeout(true), perTry);
    const req = this.stream.req;
    const pool = poolFor(pc, req.protocol === 'HTTP/2');
    this.trailersExpected = req.acceptsTrailers === true && pool instanceof H2Pool;
    const up = pool.request(this.headFor(host), this, pc, fresh);
    if (!this.stream.ended && this.host === host) {
      this.upstream = up;
      up.onWritable = () => this.stream.owner.resumeReading();
    }
  }

  /** The request head for a try on `host`: the route's request mutations evaluated for it. */
  private headFor(host: UpstreamHost): UpstreamRequestHead {
    const head = this.head as UpstreamRequestHead;
    if (this.mutations.length === 0) return head;
    const headers = head.headers.slice();
    applyHeaderMutations(headers, this.mutations, false, { info: this.stream.info, host });
    return { ...head, headers };
  }

  /** Ends the current try's accounting; `status` 0 when it got no response. */
  private endTry(status: number): void {
    const count = this.count;
    if (!count) return;
    this.host = null;
    this.count = null;
    if (this.tryTimer) clearTimeout(this.tryTimer);
    this.tryTimer = null;
    count.end(status);
  }

  /** Schedules another try when the policy, the body kept, the budget and the breaker allow it. */
  private retryIfAllowed(eligible: boolean): boolean {
    const policy = this.retry;
    const t = this.traffic;
    if (!policy || !eligible || !this.bodyKept() || this.stream.sink.headersSent) return false;
    if (this.retries >= policy.numRetries) {
      t.rqRetryLimitExceeded.inc();
      this.stream.info.flags |= FLAG.URX;
      return false;
    }
    this.retrySlot ??= t.beginRetry(this.route.priority);
    if (!this.retrySlot) return false;
    this.retries += 1;
    t.rqRetry.inc();
    this.upstream = null;
    const wait = backOffMs(policy, this.retries);
    this.tryTimer = setTimeout(() => {
      this.tryTimer = null;
      if (!this.stream.ended) this.startTry(false);
    }, wait);
    return true;
  }

  /** Every byte of the request body is still here for another try. */
  private bodyKept(): boolean {
    return this.body === null || this.body.kept;
  }

  private armTimeout(): void {
    this.stream.timers.armRoute(this.timeoutMs, this);
  }

  /** The route timer fired. */
  onTimer(): void {
    this.onTimeout(false);
  }

  private onTimeout(perTry: boolean): void {
    if (this.stream.ended) return;
    const t = this.traffic;
    const host = this.host;
    if (perTry) {
      this.tryTimer = null;
      t.rqPerTryTimeout.inc();
    } else {
      t.rqTimeout.inc();
    }
    if (host) host.stats.rq_timeout += 1;
    this.drop();
    if (perTry && this.retryIfAllowed(true)) return;
    this.stream.info.flags |= FLAG.UT;
    this.stream.info.details = perTry ? 'upstream_per_try_timeout' : 'response_timeout';
    const status = this.timeoutStatus;
    this.stream.reply(status, status === 204 ? '' : 'upstream request timeout');
  }

  /** 503 about the upstream, in the reference's words; a breaker's refusal says `x-proxy-overloaded`. */
  private upstreamLocalReply(status: number, reason: string): void {
    this.stream.info.flags |= RESET_FLAG[reason] ?? 0;
    this.stream.info.details = RESET_DETAILS[reason] ?? '';
    const overloaded = reason === 'overflow' && !this.router.suppressEnvoyHeaders;
    this.stream.reply(status, upstreamResetText(reason), overloaded ? OVERLOADED : undefined);
  }

  // ---- UpstreamHandler ----

  onUpstreamReady(up: UpstreamRequest): void {
    if (this.stream.ended) return;
    // A free connection answers synchronously, before `request()` has returned the handle.
    this.upstream = up;
    this.upstreamReady = true;
    this.stream.info.upstreamLocal = up.localAddress();
    const body = this.body;
    if (body === null) {
      up.end();
      return;
    }
    if (body.flush(up)) this.stream.owner.resumeReading();
    if (this.bodyEnded) up.end(this.requestTrailers);
  }

  onUpstreamFailure(reason: UpstreamFailure): void {
    if (this.stream.ended) return;
    this.upstream = null;
    if (reason === 'overflow') {
      this.endTry(0);
      this.upstreamLocalReply(503, 'overflow');
      return;
    }
    this.traffic.rqRxReset.inc();
    this.endTry(0);
    if (reason === 'reused-reset' && this.resendable && this.bodyKept()) {
      // A kept-alive connection the upstream closed, likely while idle: sent again, outside the retry policy.
      this.resendable = false;
      this.traffic.rqRetryReusedConnection.inc();
      this.startTry(true);
      return;
    }
    const connectFailure = reason === 'connect-failure' || reason === 'connect-timeout';
    if (this.retryIfAllowed(this.retry !== null && retriableFailure(this.retry, connectFailure))) return;
    // A malformed response head is the upstream's fault: 502, as the reference answers.
    this.upstreamLocalReply(reason === 'protocol-error' ? 502 : 503, RESET_REASON[reason]);
  }

  onUpstreamHead(status: number, headers: string[], contentLength: number): void {
    if (this.stream.ended) return;
    if (this.host && failsHealthChecksAtOnce(headers))
      this.cluster.outcome?.(this.host, IMMEDIATE_HEALTH_CHECK_FAIL);
    const retry = this.retry;
    const retriable = retry !== null && (retriableStatus(retry, status) || retriableGrpc(retry, headers));
    if (retriable && this.retries >= retry.numRetries) this.stream.info.flags |= FLAG.URX;
    if (retriable && this.retries < retry.numRetries) {
      const up = this.upstream;
      this.endTry(status);
      if (this.retryIfAllowed(true)) {
        up?.abort();
        return;
      }
      this.upstream = up;
    }
    if (this.retries > 0 && status < 500) this.traffic.rqRetrySuccess.inc();
    const out = this.mutations.length === 0 ? headers : headers.slice();
    // A response header's %RESPONSE_CODE% is the upstream's status, as in the reference.
    this.stream.info.responseCode = status;
    this.stream.info.details = 'via_upstream';
    if (out !== headers)
      applyHeaderMutations(out, this.mutations, true, { info: this.stream.info, host: this.lastHost });
    this.stream.upstreamHead(status, out, contentLength);
  }

  onUpstreamData(chunk: Buffer): void {
    if (!this.stream.ended) this.stream.upstreamData(chunk);
  }

  onUpstreamTrailers(trailers: string[]): void {
    if (!this.stream.ended) this.stream.upstreamTrailers(trailers);
  }

  onUpstreamEnd(): void {
    if (this.stream.ended) return;
    if (this.host) this.endTry(this.stream.responseStatus);
    this.stream.upstreamEnd();
  }

  onUpstreamReset(): void {
    if (this.stream.ended) return;
    this.traffic.rqRxReset.inc();
    this.stream.info.flags |= FLAG.UC;
    this.stream.info.details = 'upstream_reset_after_response_started{connection_termination}';
    this.endTry(0);
    this.stream.resetDownstream();
  }
}
