import type { MetadataCriteria } from '../../upstream/lb/criteria.js';
import { ORIGINAL_DST_HEADERS } from '../../upstream/lb/original-dst.js';
import { failsHealthChecksAtOnce, IMMEDIATE_HEALTH_CHECK_FAIL } from '../../upstream/outcomes.js';
import type { ClusterRuntime, UpstreamHost } from '../../upstream/types.js';
import { FLAG, joinHostPort, newStreamInfo, type StreamInfo } from '../access-log/stream-info.js';
import { type HttpRequest, headerValue, type ResponseSink } from '../codec/request.js';
import type { ClusterTraffic, Count, RequestCount } from '../pool/cluster-traffic.js';
import { H2Pool } from '../pool/h2-pool.js';
import { poolFor } from '../pool/index.js';
import type {
  PoolContext,
  UpstreamFailure,
  UpstreamHandler,
  UpstreamRequest,
  UpstreamRequestHead,
} from '../pool/types.js';
import { applyHeaderMutations, type HeaderMutation } from '../router/header-mutation.js';
import { readRequestControls, strictCheckFailure } from '../router/request-controls.js';
import {
  backOffMs,
  type RetryPolicy,
  retriableFailure,
  retriableGrpc,
  retriableStatus,
} from '../router/retry.js';
import { findRoute, pickWeighted, redirectLocation } from '../router/lookup.js';
import type { CompiledRoute } from '../router/table.js';
import type { TracedRequest } from '../tracing/tracer.js';
import { addCorsHeaders, type CorsResponse } from './cors.js';
import type { DownstreamOwner } from './downstream.js';
import { appendVia, applyEdge, EDGE_ROUTER_HEADERS, underscoreHeaders } from './edge.js';
import { type FilterChainEnds, FilterRunner } from './filters/runner.js';
import { type GrpcStream, isGrpcContentType, sendGrpcLocalReply } from './grpc.js';
import type { GrpcStreamStarter } from './grpc-filters.js';
import { BAD_GRPC_WEB_BODY } from './grpc-web.js';
import { downstreamResponseHeaders, upstreamRequestHead } from './headers.js';
import { RESET_REASON, sendLocalReply, upstreamResetText } from './local-reply.js';
import { normalizeRequestPath } from './path-normalize.js';
import type { RouteFilters } from './route-filters.js';
import { StreamTimer, type TimerTarget } from './stream-timer.js';
import type { TapRecorder } from './tap.js';

/** What an exchange tells the codec that owns its downstream stream. */
export interface ExchangeOwner {
  onExchangeDone(exchange: Exchange): void;
  pauseReading(): void;
  resumeReading(): void;
  /**
   * The route and stream idle timers an owner running one exchange at a time lends to each
   * of them in turn (HTTP/1: one pair per connection); absent: each exchange makes its own.
   */
  readonly timers?: ExchangeTimers;
  /** The exchange answers 400 (an invalid request): the owner decides whether its connection goes on. */
  onInvalidMessage?(): void;
}

/** A route timer and a stream idle timer, reused by the exchanges of one connection. */
export interface ExchangeTimers {
  route: StreamTimer;
  idle: StreamTimer;
}

/** Which of its timers fired, for `onTimer`. */
const ROUTE_TIMER = 0;
const IDLE_TIMER = 1;

/** The destination an ORIGINAL_DST request names in its header (either spelling), or null. */
function originalDestination(req: HttpRequest): string | null {
  for (const name of ORIGINAL_DST_HEADERS) {
    const value = headerValue(req, name);
    if (value !== undefined) return value.trim();
  }
  return null;
}

const NO_MUTATIONS: readonly HeaderMutation[] = [];
const EMPTY = Buffer.alloc(0);
/** The reference's `per_connection_buffer_limit_bytes` default, when the listener is not known. */
const DEFAULT_BUFFER_LIMIT = 1024 * 1024;

type RouteHit = NonNullable<ReturnType<typeof findRoute>>;

/** The router's own headers (unless `suppress_envoy_headers`), spelled as this proxy spells them. */
const EXPECTED_TIMEOUT_HEADER = 'x-proxy-expected-rq-timeout-ms';
const OVERLOADED_HEADER = 'x-proxy-overloaded';

/** The response flag of each reason `upstreamLocalReply` gives. */
const REASON_FLAG: Record<string, number> = {
  overflow: FLAG.UO,
  'connection failure': FLAG.UF,
  'connection termination': FLAG.UC,
  'protocol error': FLAG.UPE,
};

/**
 * One downstream request through the filter chain and the router: route, cluster, host,
 * upstream attempts with retries and timeouts, and the response back. One object per
 * request; the pools call it back as the `UpstreamHandler`.
 */
export class Exchange implements UpstreamHandler, TimerTarget, FilterChainEnds {
  private done = false;
  /** The per-request filters (src/dataplane/http/filters/api.ts); null when the chain has none. */
  private filters: FilterRunner | null = null;
  /** The routing decision, kept while a filter holds the request; null for no route. */
  private hit: RouteHit | null = null;
  private route: CompiledRoute | null = null;
  private retry: RetryPolicy | null = null;
  private cluster: ClusterRuntime | null = null;
  private traffic: ClusterTraffic | null = null;
  private host: UpstreamHost | null = null;
  /** The host of the latest attempt, kept after it ends for the response's header variables. */
  private lastHost: UpstreamHost | null = null;
  /** The current attempt in its cluster's and host's counts. */
  private attemptCount: RequestCount | null = null;
  private upstream: UpstreamRequest | null = null;
  private upstreamReady = false;
  private head: UpstreamRequestHead | null = null;
  private hash: bigint | null = null;
  private criteria: MetadataCriteria | null = null;
  /** ORIGINAL_DST with `use_http_header`: the destination the request's header names. */
  private originalDst: string | null = null;
  /** The header mutations that apply, most specific first (the route's merged list); empty when none. */
  private mutations: readonly HeaderMutation[] = NO_MUTATIONS;
  private attempt = 0;
  /** The retry breaker slot this request holds from its first retry to its end. */
  private retrySlot: Count | null = null;
  /** The route's `timeout`, armed once the whole request has arrived. */
  private readonly routeTimer: StreamTimer;
  private tryTimer: NodeJS.Timeout | null = null;
  /** HCM `request_timeout`: armed until the whole request has arrived or the response starts. */
  private requestTimer: NodeJS.Timeout | null = null;
  /** HCM `stream_idle_timeout`: restarted by every request or response byte. */
  private readonly idleTimer: StreamTimer;
  /** The timers are this exchange's own (not lent by its owner): closed when it ends. */
  private readonly ownTimers: boolean;
  /** The one transparent retry after a reused connection failed was spent. */
  private reusedRetried = false;
  /** Request body received so far, kept for retries while it fits the buffer limit. */
  private body: Buffer[] = [];
  private bodyBytes = 0;
  private bodySent = 0;
  /** The router has the request's end (the downstream sent it, and the filters passed it on). */
  private bodyEnded: boolean;
  private retainBody = true;
  private upstreamPaused = false;
  /** Status of the response being forwarded; 0 before one. */
  private responseStatus = 0;
  /** The client reads trailers and the current attempt's upstream (HTTP/2) can send them. */
  private trailersExpected = false;
  /** The downstream request's trailers (HTTP/2), for the end of the upstream request. */
  private requestTrailers: string[] | undefined = undefined;
  /** The upstream response's trailers, for the end of the downstream one. */
  private trailers: string[] | undefined = undefined;
  /** What the access logs and the debug log read when the request ends. */
  readonly info: StreamInfo;
  /** Set only while a `/tap` session is attached to this connection manager's tap filter. */
  private readonly tap: TapRecorder | null;
  /** What the CORS filter adds to this request's response, local replies included; null for nothing. */
  private cors: CorsResponse | null = null;
  /** The gRPC filters' side of a gRPC or gRPC-Web request; null for any other request. */
  private grpc: GrpcStream | null = null;
  /** This request's span when the connection manager traces; null otherwise. */
  private trace: TracedRequest | null = null;
  /** What the edge step found (`EDGE_*` bits of src/dataplane/http/edge.ts). */
  private edge = 0;
  /** The whole request's timeout (the route's, or an internal caller's header); 0 for none. */
  private timeoutMs = 0;
  /** Each attempt's timeout; 0 for none. */
  private perTryMs = 0;
  /** What a timeout answers: 504, or 204 when an internal caller asked for it. */
  private timeoutStatus = 504;
  /** When the whole request had arrived, for `x-proxy-upstream-service-time`; 0 before. */
  private requestCompleteAt = 0;
  /** The upstream response's length, while the encoders hold its head. */
  private responseLength = -1;

  constructor(
    readonly hcm: DownstreamOwner,
    readonly req: HttpRequest,
    /** The downstream's sink, or the gRPC filters' wrapping of it once they take the request. */
    public sink: ResponseSink,
    readonly owner: ExchangeOwner,
  ) {
    this.bodyEnded = !req.hasBody;
    this.info = newStreamInfo(
      req,
      req.remoteAddress ?? joinHostPort(req.remoteIp, req.remotePort),
      req.localAddress ?? '',
    );
    if (this.bodyEnded) this.requestCompleteAt = this.info.startedAt;
    this.tap = hcm.tap === null ? null : hcm.tap.recorderFor(req);
    const s = hcm.stats;
    s.rqTotal.inc();
    s.rqActive.inc();
    (req.protocol === 'HTTP/2' ? s.rqHttp2Total : s.rqHttp1Total).inc();
    const t = hcm.timeouts;
    if (t.requestMs > 0 && req.hasBody)
      this.requestTimer = setTimeout(() => this.onStreamTimeout(true), t.requestMs);
    const lent = owner.timers;
    this.ownTimers = lent === undefined;
    this.routeTimer = lent === undefined ? new StreamTimer() : lent.route;
    this.idleTimer = lent === undefined ? new StreamTimer() : lent.idle;
    if (t.streamIdleMs > 0) this.idleTimer.arm(t.streamIdleMs, this, IDLE_TIMER);
  }

  /** Runs the filter chain; errors answer 500 rather than escaping to the socket. */
  start(): void {
    try {
      this.decodeHeaders();
    } catch (err) {
      this.hcm.log.error({ err }, 'request handling failed');
      this.failLocally(500, 'internal error\n');
    }
  }

  private decodeHeaders(): void {
    const hcm = this.hcm;
    const req = this.req;
    // The reference's connection manager, in its order: version, Host, then the path.
    if (req.protocol === 'HTTP/1.0') {
      const http1 = hcm.spec.http1;
      if (!http1.acceptHttp10) {
        this.localReply(426, '');
        return;
      }
      if (!req.authority) req.authority = http1.defaultHostForHttp10;
      if (!req.authority) {
        this.localReply(400, 'missing host');
        return;
      }
    }
    if (req.path.charCodeAt(0) !== 47 /* / */) {
      hcm.stats.rqNonRelativePath.inc();
      this.localReply(404, '');
      return;
    }
    // A fragment is never part of a request target (RFC 9112 3.2): `/admin#x` would pass a
    // route denying `/admin` and reach an origin that drops it (the reference's CVE-2021-32779).
    if (req.path.includes('#')) {
      this.localReply(400, 'invalid path');
      return;
    }
    // Before anything reads the path, as the reference: a route denying /admin sees /public/../admin as /admin.
    if (!normalizeRequestPath(this.req, hcm.normalizePath, hcm.spec.mergeSlashes)) {
      this.localReply(400, 'invalid path');
      return;
    }
    const dropped =
      hcm.spec.underscores === 'ALLOW' ? 0 : underscoreHeaders(this.req.headers, hcm.spec.underscores);
    if (dropped < 0) {
      hcm.stats.rqRejectedUnderscores.inc();
      this.localReply(400, 'Bad Request');
      return;
    }
    if (dropped > 0) hcm.stats.droppedUnderscores.add(dropped);
    const routes = hcm.routes;
    this.edge = applyEdge(this.req, hcm.spec.edge, hcm.localAddress, routes.internalOnlyHeaders, this.info);
    // Before the upstream head is built: the span's context is written into the request's headers.
    if (hcm.tracer !== null) this.trace = hcm.tracer.start(this.req);
    if (hcm.deps.ctx.store.state.server.overload?.stop_accepting_requests) {
      // As the reference: answered before any filter (health checks too) or route, and never sent upstream.
      hcm.stats.rqOverloadClose.inc();
      this.localReply(503, 'proxy overloaded');
      return;
    }
    const hc = hcm.filters.healthCheck;
    if (hc?.matches.every((m) => m(this.req))) {
      this.info.healthCheck = true;
      const failing = hcm.deps.ctx.store.state.server.healthCheckFailed;
      if (failing) {
        this.info.flags |= FLAG.LH;
        this.localReply(503, '', ['x-proxy-immediate-health-check-fail', 'true']);
        return;
      }
      if (!hc.passThrough) {
        this.localReply(200, '');
        return;
      }
    }
    if (hcm.grpc !== null) this.startGrpc(hcm.grpc);
    const hit = findRoute(routes, this.req);
    if (hcm.routeFilters !== null && this.runRouteFilters(hcm.routeFilters, hit)) return;
    if (hcm.streamFilters === null) {
      this.routeRequest(hit);
      return;
    }
    this.hit = hit;
    this.filters = new FilterRunner(
      hcm.streamFilters.map((make) => make()),
      this,
    );
    this.filters.decodeHeaders();
  }

  // ---- FilterChainEnds: what the per-request filters run between ----

  get ended(): boolean {
    return this.done;
  }

  get bufferLimit(): number {
    return this.hcm.deps.bufferLimitBytes ?? DEFAULT_BUFFER_LIMIT;
  }

  get matchedRoute(): CompiledRoute | null {
    return this.hit?.route ?? null;
  }

  get routeCluster(): string | null {
    const action = this.hit?.route.action;
    return action?.kind === 'cluster' ? action.cluster : null;
  }

  perRoute(configType: string): unknown {
    const hit = this.hit;
    if (hit === null) return undefined;
    return hit.route.perFilter?.get(configType) ?? hit.vh.perFilter?.get(configType);
  }

  clearRouteCache(): void {
    this.hit = findRoute(this.hcm.routes, this.req);
  }

  sendLocalReply(status: number, body: string, headers?: string[]): void {
    this.replaceResponse(status, body, headers);
  }

  decodedHeaders(): void {
    this.routeRequest(this.hit);
  }

  decodedData(chunk: Buffer, end: boolean): void {
    if (chunk.length > 0) this.routerBody(chunk);
    if (end) this.routerEnd(undefined);
  }

  decodedTrailers(trailers: string[]): void {
    this.routerEnd(trailers);
  }

  encodedHeaders(status: number, headers: string[]): void {
    this.writeHead(status, headers, this.responseLength);
  }

  encodedData(chunk: Buffer, end: boolean): void {
    if (chunk.length > 0) this.writeBody(chunk);
    if (end) this.endResponse(undefined);
  }

  encodedTrailers(trailers: string[]): void {
    this.endResponse(trailers);
  }

  decodeWatermark(above: boolean): void {
    if (above) this.owner.pauseReading();
    else this.owner.resumeReading();
  }

  encodeWatermark(above: boolean): void {
    this.upstreamPaused = above;
    if (above) this.upstream?.pause();
    else this.upstream?.resume();
  }

  decodeTooLarge(): void {
    this.hcm.stats.rqTooLarge.inc();
    this.replaceResponse(413, 'Payload Too Large');
  }

  encodeTooLarge(): void {
    this.hcm.stats.rsTooLarge.inc();
    this.replaceResponse(500, 'Internal Server Error');
  }

  /** A filter's answer at any point: the upstream attempt, if one is under way, is dropped. */
  private replaceResponse(status: number, body: string, headers?: string[]): void {
    if (this.done) return;
    this.endAttempt(0);
    this.finalLocalReply(status, body, headers);
  }

  /** The router: route, cluster and upstream request for a request the filters passed on. */
  private routeRequest(hit: RouteHit | null): void {
    const hcm = this.hcm;
    if (!hit) {
      this.info.flags |= FLAG.NR;
      hcm.stats.noRoute.inc();
      this.localReply(404, '');
      return;
    }
    const route = hit.route;
    this.route = route;
    this.info.routeName = route.name;
    if (route.idleTimeoutMs !== null) this.replaceIdleTimeout(route.idleTimeoutMs);
    const action = route.action;
    this.mutations = route.mutations;
    if (action.kind === 'direct') {
      hcm.stats.rqDirectResponse.inc();
      this.localReply(action.status, action.body ?? '', this.responseHeaders([]));
      return;
    }
    if (action.kind === 'redirect') {
      hcm.stats.rqRedirect.inc();
      const location = ['location', redirectLocation(action, route, this.req)];
      this.localReply(action.status, '', this.responseHeaders(location));
      return;
    }
    let clusterName: string;
    if (action.kind === 'weighted') {
      const target = pickWeighted(action, Math.random());
      clusterName = target.name;
      this.criteria = target.criteria;
      this.mutations = target.mutations;
    } else {
      clusterName = action.cluster;
      this.criteria = route.criteria;
    }
    hcm.stats.routerRqTotal.inc();
    const cluster = hcm.deps.clusters.get(clusterName);
    if (!cluster) {
      this.info.flags |= FLAG.NR;
      hcm.stats.noCluster.inc();
      this.localReply(route.clusterNotFoundStatus, '');
      return;
    }
    this.cluster = cluster;
    this.info.upstreamCluster = clusterName;
    this.traffic = cluster.traffic;
    this.retry = route.retry ?? hit.vh.retry;
    this.timeoutMs = route.timeoutMs;
    let perTryMs = this.retry?.perTryTimeoutMs ?? 0;
    const router = hcm.filters.router;
    if (this.edge & EDGE_ROUTER_HEADERS) {
      const bad =
        router.strictCheckHeaders.length === 0
          ? null
          : strictCheckFailure(this.req.headers, router.strictCheckHeaders);
      if (bad !== null) {
        this.info.flags |= FLAG.IH;
        this.localReply(400, `invalid header '${bad[0]}' with value '${bad[1]}'`);
        return;
      }
      const controls = readRequestControls(this.req.headers, this.retry, route.timeoutMs, router);
      this.retry = controls.retry;
      this.timeoutMs = controls.timeoutMs;
      perTryMs = controls.perTryMs;
      this.timeoutStatus = controls.timeoutStatus;
    }
    // As the reference: a per-try timeout not below the whole request's is none.
    this.perTryMs = this.timeoutMs !== 0 && perTryMs >= this.timeoutMs ? 0 : perTryMs;
    this.hash = route.hash ? route.hash(this.req) : null;
    // The header first where the cluster reads it, then the connection's restored destination.
    this.originalDst =
      (cluster.settings.useOriginalDstHeader ? originalDestination(this.req) : null) ??
      this.req.originalDst ??
      null;
    this.head = upstreamRequestHead(this.req, route, hcm);
    if (!router.suppressEnvoyHeaders) {
      // What the upstream has to answer in: the per-try timeout, else the whole request's.
      const expected = this.perTryMs || this.timeoutMs;
      if (expected > 0) this.head.headers.push(EXPECTED_TIMEOUT_HEADER, String(expected));
    }
    if (this.req.acceptsTrailers === true && this.req.hasBody) this.head.trailers = true;
    if (this.bodyEnded) this.armTimeout();
    this.startAttempt();
  }

  /** The gRPC filters take the request (and rewrite it) before it is routed, as they come first in the chain. */
  private startGrpc(start: GrpcStreamStarter): void {
    const stream = start(this.req, this.sink, () => this.traffic?.scope ?? null);
    if (stream === null) return;
    this.grpc = stream;
    this.sink = stream.sink;
  }

  /** A gRPC-Web text body that is not base64: refused, as the reference does, mid-request. */
  private refuseGrpcBody(): void {
    this.endAttempt(0);
    this.finalLocalReply(400, BAD_GRPC_WEB_BODY);
  }

  /** The CORS and CSRF filters, before the router; true when one answered the request itself. */
  private runRouteFilters(filters: RouteFilters, hit: RouteHit | null): boolean {
    const verdict = filters.decode(this.req, hit);
    if (verdict === null) return false;
    this.cors = verdict.cors;
    if (verdict.reply === null) return false;
    this.localReply(verdict.reply.status, verdict.reply.body, verdict.reply.headers);
    return true;
  }

  /** `headers` with the response mutations of the route's levels applied (in place). */
  private responseHeaders(headers: string[]): string[] {
    if (this.mutations.length > 0)
      applyHeaderMutations(headers, this.mutations, true, { info: this.info, host: this.lastHost });
    return headers;
  }

  /** The request head for an attempt on `host`: the route's request mutations evaluated for it. */
  private headFor(host: UpstreamHost): UpstreamRequestHead {
    const head = this.head as UpstreamRequestHead;
    if (this.mutations.length === 0) return head;
    const headers = head.headers.slice();
    applyHeaderMutations(headers, this.mutations, false, { info: this.info, host });
    return { ...head, headers };
  }

  private armTimeout(): void {
    const ms = this.timeoutMs;
    if (ms > 0 && !this.routeTimer.armed) this.routeTimer.arm(ms, this, ROUTE_TIMER);
  }

  onTimer(kind: number): void {
    if (kind === ROUTE_TIMER) this.onTimeout(false);
    else this.onStreamTimeout(false);
  }

  /** Sends the request to a host; `fresh` asks the pool for a new connection. */
  private startAttempt(fresh = false): void {
    const cluster = this.cluster as ClusterRuntime;
    const t = this.traffic as ClusterTraffic;
    const priority = (this.route as CompiledRoute).priority;
    if (!t.admitRequest(priority)) {
      this.upstreamLocalReply(503, 'overflow');
      return;
    }
    const host = cluster.lb.choose({
      hash: this.hash,
      attempt: this.attempt,
      criteria: this.criteria,
      originalDst: this.originalDst,
    });
    if (!host) {
      t.cxNoneHealthy.inc();
      this.info.flags |= FLAG.UH;
      this.finalLocalReply(503, 'no healthy upstream');
      return;
    }
    this.host = host;
    this.lastHost = host;
    this.info.upstreamHost = host.address;
    this.attemptCount = t.beginRequest(host, priority);
    this.upstreamReady = false;
    this.bodySent = 0;
    const pc: PoolContext = {
      cluster,
      host,
      traffic: t,
      connector: t.connector,
      priority,
    };
    const perTry = this.perTryMs;
    if (perTry > 0) this.tryTimer = setTimeout(() => this.onTimeout(true), perTry);
    const pool = poolFor(pc, this.req.protocol === 'HTTP/2');
    this.trailersExpected = this.req.acceptsTrailers === true && pool instanceof H2Pool;
    const up = pool.request(this.headFor(host), this, pc, fresh);
    if (!this.done && this.host === host) {
      this.upstream = up;
      up.onWritable = () => this.owner.resumeReading();
    }
  }

  /** Ends the current attempt's accounting; `status` 0 when it got no response. */
  private endAttempt(status: number): void {
    const count = this.attemptCount;
    if (!count) return;
    this.host = null;
    this.attemptCount = null;
    if (this.tryTimer) clearTimeout(this.tryTimer);
    this.tryTimer = null;
    count.end(status);
  }

  /** Schedules another attempt when the policy, the budget and the breaker allow it. */
  private tryRetry(eligible: boolean): boolean {
    const policy = this.retry;
    const t = this.traffic as ClusterTraffic;
    if (!policy || !eligible || !this.retainBody || this.sink.headersSent) return false;
    if (this.attempt >= policy.numRetries) {
      t.rqRetryLimitExceeded.inc();
      this.info.flags |= FLAG.URX;
      return false;
    }
    this.retrySlot ??= t.beginRetry(this.route?.priority);
    if (!this.retrySlot) return false;
    this.attempt += 1;
    t.rqRetry.inc();
    this.upstream = null;
    const wait = backOffMs(policy, this.attempt);
    this.tryTimer = setTimeout(() => {
      this.tryTimer = null;
      if (!this.done) this.startAttempt();
    }, wait);
    return true;
  }

  private onTimeout(perTry: boolean): void {
    if (this.done) return;
    const t = this.traffic as ClusterTraffic;
    const host = this.host;
    if (perTry) {
      this.tryTimer = null;
      t.rqPerTryTimeout.inc();
    } else {
      t.rqTimeout.inc();
    }
    if (host) host.stats.rq_timeout += 1;
    this.upstream?.abort();
    this.upstream = null;
    this.endAttempt(0);
    if (perTry && this.tryRetry(true)) return;
    this.info.flags |= FLAG.UT;
    if (this.sink.headersSent) {
      this.resetDownstream();
      return;
    }
    this.finalLocalReply(this.timeoutStatus, this.timeoutStatus === 204 ? '' : 'upstream request timeout');
  }

  /**
   * The HCM's `request_timeout` (`requestTimeout`) or `stream_idle_timeout` fired: 408 before
   * the response starts, as the reference answers both, then a reset stream.
   */
  private onStreamTimeout(requestTimeout: boolean): void {
    if (this.done) return;
    const s = this.hcm.stats;
    if (requestTimeout) {
      this.requestTimer = null;
      s.rqTimeout.inc();
    } else {
      s.rqIdleTimeout.inc();
      this.info.flags |= FLAG.SI;
    }
    if (this.upstream) {
      this.traffic?.rqTxReset.inc();
      this.upstream.abort();
      this.upstream = null;
    }
    this.endAttempt(0);
    if (this.sink.headersSent) {
      this.resetDownstream();
      return;
    }
    this.localReply(408, requestTimeout ? 'request timeout' : 'stream timeout');
  }

  /** The route's `idle_timeout` takes the place of the HCM's `stream_idle_timeout`, counted from now. */
  private replaceIdleTimeout(ms: number): void {
    if (ms > 0) this.idleTimer.arm(ms, this, IDLE_TIMER);
    else this.idleTimer.disarm();
  }

  private clearRequestTimer(): void {
    if (!this.requestTimer) return;
    clearTimeout(this.requestTimer);
    this.requestTimer = null;
  }

  // ---- downstream body ----

  /** Request body bytes from the codec. */
  onBody(chunk: Buffer): void {
    if (this.done) return;
    this.idleTimer.refresh();
    this.bodyBytes += chunk.length;
    this.tap?.requestBody(chunk);
    if (this.grpc !== null) {
      const decoded = this.grpc.requestBody(chunk);
      if (decoded === null) {
        this.refuseGrpcBody();
        return;
      }
      if (decoded.length === 0) return;
      chunk = decoded;
    }
    if (this.filters !== null) this.filters.decodeData(chunk, false);
    else this.routerBody(chunk);
  }

  /** Request body bytes past the filters: to the upstream, or kept until it is ready. */
  private routerBody(chunk: Buffer): void {
    const limit = this.cluster?.settings.perConnectionBufferLimitBytes ?? 1024 * 1024;
    if (this.upstreamReady && this.upstream) {
      if (this.retainBody) this.body.push(chunk);
      this.bodySent = this.body.length;
      if (!this.upstream.write(chunk)) this.owner.pauseReading();
    } else {
      this.body.push(chunk);
      if (this.bodyBytes > limit) this.owner.pauseReading();
    }
    if (this.bodyBytes > limit) this.retainBody = false;
  }

  onBodyEnd(): void {
    // `requestCompleteAt` is set once the downstream sent the whole request (at once without a body).
    if (this.done || this.requestCompleteAt !== 0) return;
    if (this.grpc !== null && !this.grpc.requestEnd()) {
      this.refuseGrpcBody();
      return;
    }
    this.requestCompleteAt = performance.now();
    this.clearRequestTimer();
    const filters = this.filters;
    if (filters === null) this.routerEnd(this.requestTrailers);
    else if (this.requestTrailers !== undefined) filters.decodeTrailers(this.requestTrailers);
    else filters.decodeData(EMPTY, true);
  }

  /** The request's end past the filters, with its trailers (HTTP/2) if it has them. */
  private routerEnd(trailers: string[] | undefined): void {
    this.bodyEnded = true;
    this.requestTrailers = trailers;
    if (this.head) this.armTimeout();
    if (this.upstreamReady && this.upstream) this.upstream.end(trailers);
  }

  /** The request's trailers (HTTP/2), just before its end. */
  onRequestTrailers(trailers: string[]): void {
    this.requestTrailers = trailers;
  }

  /** The downstream stream went away (client reset or closed). */
  onDownstreamReset(): void {
    if (this.done) return;
    this.hcm.stats.rqRxReset.inc();
    this.info.flags |= FLAG.DC;
    if (this.upstream) {
      this.traffic?.rqTxReset.inc();
      this.upstream.abort();
    }
    this.endAttempt(0);
    this.finish(0);
  }

  /**
   * The codec found the request's body malformed (a bad chunk): the upstream attempt is
   * dropped and, when no response has started, the client is answered `status` (`DPE`), as
   * the reference's codec answers before closing; otherwise the response is cut.
   */
  onDownstreamProtocolError(status: number): void {
    if (this.done) return;
    this.info.flags |= FLAG.DPE;
    if (this.upstream) {
      this.traffic?.rqTxReset.inc();
      this.upstream.abort();
      this.upstream = null;
    }
    this.endAttempt(0);
    this.bodyEnded = true;
    this.finalLocalReply(status, '');
  }

  /** The downstream can take more response bytes. */
  onDownstreamDrain(): void {
    if (this.upstreamPaused) {
      this.upstreamPaused = false;
      this.upstream?.resume();
    }
  }

  // ---- UpstreamHandler ----

  onUpstreamReady(up: UpstreamRequest): void {
    if (this.done) return;
    // A free connection answers synchronously, before `request()` has returned the handle.
    this.upstream = up;
    this.upstreamReady = true;
    for (let i = this.bodySent; i < this.body.length; i++) up.write(this.body[i] as Buffer);
    this.bodySent = this.body.length;
    if (!this.retainBody) {
      this.body = [];
      this.bodySent = 0;
      this.owner.resumeReading();
    }
    if (this.bodyEnded && this.req.hasBody) up.end(this.requestTrailers);
    else if (!this.req.hasBody) up.end();
  }

  onUpstreamFailure(reason: UpstreamFailure): void {
    if (this.done) return;
    this.upstream = null;
    if (reason === 'overflow') {
      this.endAttempt(0);
      this.upstreamLocalReply(503, 'overflow');
      return;
    }
    this.traffic?.rqRxReset.inc();
    this.endAttempt(0);
    if (reason === 'reused-reset' && !this.reusedRetried && this.retainBody) {
      // A kept-alive connection the upstream closed while idle: the request never reached
      // it, so it is sent again at once on a new connection, outside the retry policy.
      this.reusedRetried = true;
      this.traffic?.rqRetryReusedConnection.inc();
      this.startAttempt(true);
      return;
    }
    const connectFailure = reason === 'connect-failure' || reason === 'connect-timeout';
    if (this.tryRetry(this.retry !== null && retriableFailure(this.retry, connectFailure))) return;
    // A malformed response head is the upstream's fault: 502, as the reference answers.
    this.upstreamLocalReply(reason === 'protocol-error' ? 502 : 503, RESET_REASON[reason]);
  }

  onUpstreamHead(status: number, headers: string[], contentLength: number): void {
    if (this.done) return;
    if (this.host && failsHealthChecksAtOnce(headers))
      this.cluster?.outcome?.(this.host, IMMEDIATE_HEALTH_CHECK_FAIL);
    const retry = this.retry;
    const retriable = retry !== null && (retriableStatus(retry, status) || retriableGrpc(retry, headers));
    if (retriable && this.attempt >= retry.numRetries) this.info.flags |= FLAG.URX;
    if (retriable && this.attempt < retry.numRetries) {
      const up = this.upstream;
      this.endAttempt(status);
      if (this.tryRetry(true)) {
        up?.abort();
        return;
      }
      this.forwardHead(status, headers, contentLength, up);
      return;
    }
    this.forwardHead(status, headers, contentLength, this.upstream);
  }

  private forwardHead(
    status: number,
    headers: string[],
    contentLength: number,
    up: UpstreamRequest | null,
  ): void {
    this.upstream = up;
    this.clearRequestTimer();
    this.idleTimer.refresh();
    if (this.attempt > 0 && status < 500) this.traffic?.rqRetrySuccess.inc();
    const mutated = this.mutations.length === 0 ? headers : this.responseHeaders(headers.slice());
    const now = performance.now();
    const serviceTime = this.hcm.filters.router.suppressEnvoyHeaders
      ? null
      : String(Math.round(now - (this.requestCompleteAt || this.info.startedAt)));
    const out = downstreamResponseHeaders(
      mutated,
      this.hcm.serverName,
      serviceTime,
      this.hcm.spec.serverHeader,
    );
    if (this.hcm.spec.edge.via) appendVia(out, this.hcm.spec.edge.via);
    if (this.cors !== null) addCorsHeaders(out, this.cors);
    this.responseStatus = status;
    this.info.firstUpstreamByteAt = now;
    if (this.filters === null) {
      this.writeHead(status, out, contentLength);
      return;
    }
    this.responseLength = contentLength;
    this.filters.encodeHeaders(status, out);
  }

  /** The response head past the filters, to the downstream. */
  private writeHead(status: number, headers: string[], contentLength: number): void {
    this.sink.writeHead(status, headers, contentLength, false, this.trailersExpected);
    this.info.responseCode = status;
    this.info.responseHeaders = headers;
  }

  onUpstreamData(chunk: Buffer): void {
    if (this.done) return;
    this.idleTimer.refresh();
    this.tap?.responseBody(chunk);
    if (this.filters !== null) this.filters.encodeData(chunk, false);
    else this.writeBody(chunk);
  }

  /** Response body bytes past the filters, to the downstream; a full one pauses the upstream. */
  private writeBody(chunk: Buffer): void {
    this.info.bytesSent += chunk.length;
    if (!this.sink.writeData(chunk) && !this.upstreamPaused) {
      this.upstreamPaused = true;
      this.upstream?.pause();
    }
  }

  onUpstreamTrailers(trailers: string[]): void {
    if (this.done) return;
    this.trailers = trailers;
    if (this.grpc === null) return;
    const status = this.grpc.trailers(trailers);
    // The bridge's 503 for a failed call is what the client gets: counted and logged so.
    if (status > 0) this.responseStatus = this.info.responseCode = status;
  }

  onUpstreamEnd(): void {
    if (this.done) return;
    if (this.host) this.endAttempt(this.responseStatus);
    const filters = this.filters;
    if (filters === null) this.endResponse(this.trailers);
    else if (this.trailers !== undefined) filters.encodeTrailers(this.trailers);
    else filters.encodeData(EMPTY, true);
  }

  /** The response's end past the filters. */
  private endResponse(trailers: string[] | undefined): void {
    this.sink.end(trailers);
    this.finish(this.responseStatus);
  }

  onUpstreamReset(): void {
    if (this.done) return;
    this.traffic?.rqRxReset.inc();
    this.info.flags |= FLAG.UC;
    this.endAttempt(0);
    this.resetDownstream();
  }

  // ---- local replies ----

  private resetDownstream(): void {
    this.hcm.stats.rqResetAfterResponseStarted.inc();
    this.hcm.stats.rqTxReset.inc();
    this.sink.reset();
    this.finish(0);
  }

  /** 503 about the upstream, in the reference's words; a breaker's refusal says `x-proxy-overloaded`. */
  private upstreamLocalReply(status: number, reason: string): void {
    this.info.flags |= REASON_FLAG[reason] ?? 0;
    const overloaded = reason === 'overflow' && !this.hcm.filters.router.suppressEnvoyHeaders;
    this.finalLocalReply(
      status,
      upstreamResetText(reason),
      overloaded ? [OVERLOADED_HEADER, 'true'] : undefined,
    );
  }

  private finalLocalReply(status: number, text: string, headers?: string[]): void {
    if (this.sink.headersSent) {
      this.resetDownstream();
      return;
    }
    this.upstream?.abort();
    this.upstream = null;
    this.localReply(status, text, headers);
  }

  private failLocally(status: number, text: string): void {
    if (this.done) return;
    if (this.sink.headersSent) {
      this.resetDownstream();
      return;
    }
    this.localReply(status, text);
  }

  /** A response made by the proxy itself: text/plain body, never forwarded upstream. */
  private localReply(status: number, body: string | Buffer, extra: string[] = []): void {
    // As the reference: a 400 is an invalid message, and ends an HTTP/1 connection unless
    // `stream_error_on_invalid_http_message` (or its HTTP/1 override) says otherwise.
    if (status === 400) this.owner.onInvalidMessage?.();
    const via = this.hcm.spec.edge.via;
    const headers = this.cors === null && !via && this.filters === null ? extra : extra.slice();
    if (this.cors !== null) addCorsHeaders(headers, this.cors);
    if (via) appendVia(headers, via);
    if (this.filters !== null) this.filters.encodeLocalHeaders(status, headers);
    // As the reference's router: any gRPC request gets a gRPC answer (read here, not per request).
    const grpc = this.grpc !== null || isGrpcContentType(headerValue(this.req, 'content-type'));
    const sent = grpc
      ? sendGrpcLocalReply(this.sink, this.localServerName(), status, body, headers)
      : sendLocalReply(this.sink, this.req.method, this.localServerName(), status, body, headers);
    // A gRPC local reply is a 200 (its status is in grpc-status), counted and logged so.
    const code = grpc ? 200 : status;
    this.info.responseCode = code;
    this.info.responseHeaders = sent.headers;
    this.info.bytesSent += sent.bodyBytes;
    if (this.tap && sent.bodyBytes > 0)
      this.tap.responseBody(typeof body === 'string' ? Buffer.from(body) : body);
    this.finish(code);
  }

  /** The `server` of the proxy's own replies: none when `server_header_transformation: PASS_THROUGH`. */
  private localServerName(): string {
    return this.hcm.spec.serverHeader === 'PASS_THROUGH' ? '' : this.hcm.serverName;
  }

  private finish(status: number): void {
    if (this.done) return;
    this.done = true;
    this.filters?.destroy();
    // No array of the timers: this runs once per request.
    if (this.tryTimer) clearTimeout(this.tryTimer);
    if (this.requestTimer) clearTimeout(this.requestTimer);
    this.tryTimer = this.requestTimer = null;
    if (this.ownTimers) {
      this.routeTimer.close();
      this.idleTimer.close();
    } else {
      this.routeTimer.disarm();
      this.idleTimer.disarm();
    }
    this.retrySlot?.end();
    const s = this.hcm.stats;
    s.rqActive.dec();
    if (status > 0) {
      s.rqClasses[Math.floor(status / 100) - 1]?.inc();
      s.rqCompleted.inc();
    }
    // One clock read for the histogram and the access log (the stream info's start is ours).
    const now = performance.now();
    this.info.endedAt = now;
    s.rqTime.record(Math.round(now - this.info.startedAt));
    this.info.bytesReceived = this.bodyBytes;
    this.hcm.onStreamEnd(this.info);
    this.trace?.finish(this.info, this.route);
    this.tap?.end(this.info);
    this.owner.onExchangeDone(this);
  }
}
