import { FLAG, joinHostPort, newStreamInfo, type StreamInfo } from '../access-log/stream-info.js';
import { type HttpRequest, headerValue, type ResponseSink } from '../codec/request.js';
import { findRoute } from '../router/lookup.js';
import type { CompiledRoute } from '../router/table.js';
import type { TracedRequest } from '../tracing/tracer.js';
import { addCorsHeaders, type CorsResponse } from './cors.js';
import type { DownstreamOwner } from './downstream.js';
import { appendVia, applyEdge, underscoreHeaders } from './edge.js';
import { type RouteHit, type RouterStream, routeRequest } from './filters/router/route.js';
import type { UpstreamAttempt } from './filters/router/upstream-attempt.js';
import { type FilterChainEnds, FilterRunner } from './filters/runner.js';
import { type GrpcStream, isGrpcContentType, sendGrpcLocalReply } from './grpc.js';
import type { GrpcStreamStarter } from './grpc-filters.js';
import { BAD_GRPC_WEB_BODY } from './grpc-web.js';
import { downstreamResponseHeaders } from './headers.js';
import { sendLocalReply } from './local-reply.js';
import { normalizeRequestPath } from './path-normalize.js';
import type { RouteFilters } from './route-filters.js';
import type { TimerTarget } from './stream-timer.js';
import { REQUEST_TIMEOUT, type StreamTimers } from './stream-timers.js';
import type { TapRecorder } from './tap.js';

/** What an exchange tells the codec that owns its downstream stream. */
export interface ExchangeOwner {
  onExchangeDone(exchange: Exchange): void;
  pauseReading(): void;
  resumeReading(): void;
  /** The stream's timers, lent to one exchange at a time (disarmed when it ends). */
  readonly timers: StreamTimers;
  /** The exchange answers 400 (an invalid request): the owner decides whether its connection goes on. */
  onInvalidMessage?(): void;
}

const EMPTY = Buffer.alloc(0);
/** The reference's `per_connection_buffer_limit_bytes` default, when the listener is not known. */
const DEFAULT_BUFFER_LIMIT = 1024 * 1024;

/**
 * One downstream request, from its head to the end of its response: the filters before the
 * router (the overload and health-check answers, gRPC, CORS and CSRF, the per-request chain of
 * src/dataplane/http/filters/runner.ts), the router filter (filters/router/route.ts) and its
 * upstream attempt (filters/router/upstream-attempt.ts), the stream's timers, the response's
 * way back through the encoders, the proxy's own replies and the request's record.
 */
export class Exchange implements TimerTarget, FilterChainEnds, RouterStream {
  private done = false;
  /** The per-request filters (src/dataplane/http/filters/api.ts); null when the chain has none. */
  private filters: FilterRunner | null = null;
  /** The routing decision, kept while a filter holds the request; null for no route. */
  private hit: RouteHit | null = null;
  /** The route the router took, for the span; null before or without one. */
  private route: CompiledRoute | null = null;
  /** The router's way to the upstream; null before the router has a cluster, or without one. */
  private attempt: UpstreamAttempt | null = null;
  /** The stream's idle and request timeouts, and the route's (src/dataplane/http/stream-timers.ts). */
  readonly timers: StreamTimers;
  private bodyBytes = 0;
  /** Status of the response being forwarded; 0 before one. */
  responseStatus = 0;
  /** The downstream request's trailers (HTTP/2), held until its end. */
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
  edge = 0;
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
    this.info = newStreamInfo(
      req,
      req.remoteAddress ?? joinHostPort(req.remoteIp, req.remotePort),
      req.localAddress ?? '',
    );
    if (!req.hasBody) this.requestCompleteAt = this.info.startedAt;
    this.tap = hcm.tap === null ? null : hcm.tap.recorderFor(req);
    const s = hcm.stats;
    s.rqTotal.inc();
    s.rqActive.inc();
    (req.protocol === 'HTTP/2' ? s.rqHttp2Total : s.rqHttp1Total).inc();
    this.timers = owner.timers;
    this.timers.begin(this, hcm.timeouts, req.hasBody);
  }

  /** Runs the filter chain; errors answer 500 rather than escaping to the socket. */
  start(): void {
    try {
      this.decodeHeaders();
    } catch (err) {
      this.hcm.log.error({ err }, 'request handling failed');
      this.replaceResponse(500, 'internal error\n');
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
      this.runRouter(hit);
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
    this.runRouter(this.hit);
  }

  decodedData(chunk: Buffer, end: boolean): void {
    if (chunk.length > 0) this.attempt?.data(chunk);
    if (end) this.attempt?.end(undefined);
  }

  decodedTrailers(trailers: string[]): void {
    this.attempt?.end(trailers);
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
    if (above) this.attempt?.pause();
    else this.attempt?.resume();
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
    this.reply(status, body, headers);
  }

  /** The router filter, at the end of the chain: a local answer, or the attempt it begins. */
  private runRouter(hit: RouteHit | null): void {
    const attempt = routeRequest(this, hit);
    if (attempt === null) return;
    this.attempt = attempt;
    attempt.begin();
  }

  // ---- RouterStream: what the router filter and its attempt use ----

  routed(route: CompiledRoute): void {
    this.route = route;
    this.info.routeName = route.name;
    if (route.idleTimeoutMs !== null) this.timers.replaceIdle(route.idleTimeoutMs, this);
  }

  get responseStarted(): boolean {
    return this.sink.headersSent;
  }

  pauseReading(): void {
    this.owner.pauseReading();
  }

  resumeReading(): void {
    this.owner.resumeReading();
  }

  /** The gRPC filters take the request (and rewrite it) before it is routed, as they come first in the chain. */
  private startGrpc(start: GrpcStreamStarter): void {
    const stream = start(this.req, this.sink, () => this.attempt?.traffic.scope ?? null);
    if (stream === null) return;
    this.grpc = stream;
    this.sink = stream.sink;
  }

  /** A gRPC-Web text body that is not base64: refused, as the reference does, mid-request. */
  private refuseGrpcBody(): void {
    this.reply(400, BAD_GRPC_WEB_BODY);
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

  onTimer(kind: number): void {
    this.onStreamTimeout(kind === REQUEST_TIMEOUT);
  }

  /**
   * The HCM's `request_timeout` (`requestTimeout`) or `stream_idle_timeout` fired: 408 before
   * the response starts, as the reference answers both, then a reset stream.
   */
  private onStreamTimeout(requestTimeout: boolean): void {
    if (this.done) return;
    const s = this.hcm.stats;
    if (requestTimeout) {
      s.rqTimeout.inc();
    } else {
      s.rqIdleTimeout.inc();
      this.info.flags |= FLAG.SI;
    }
    this.attempt?.cancel();
    if (this.sink.headersSent) {
      this.resetDownstream();
      return;
    }
    this.localReply(408, requestTimeout ? 'request timeout' : 'stream timeout');
  }

  // ---- downstream body ----

  /** Request body bytes from the codec. */
  onBody(chunk: Buffer): void {
    if (this.done) return;
    this.timers.active();
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
    else this.attempt?.data(chunk);
  }

  onBodyEnd(): void {
    // `requestCompleteAt` is set once the downstream sent the whole request (at once without a body).
    if (this.done || this.requestCompleteAt !== 0) return;
    if (this.grpc !== null && !this.grpc.requestEnd()) {
      this.refuseGrpcBody();
      return;
    }
    this.requestCompleteAt = performance.now();
    this.timers.requestDone();
    const filters = this.filters;
    if (filters === null) this.attempt?.end(this.requestTrailers);
    else if (this.requestTrailers !== undefined) filters.decodeTrailers(this.requestTrailers);
    else filters.decodeData(EMPTY, true);
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
    this.attempt?.cancel();
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
    this.attempt?.cancel();
    this.reply(status, '');
  }

  /** The downstream can take more response bytes. */
  onDownstreamDrain(): void {
    this.attempt?.resume();
  }

  // ---- the upstream response, from the attempt ----

  upstreamHead(status: number, headers: string[], contentLength: number): void {
    this.timers.requestDone();
    this.timers.active();
    const now = performance.now();
    const serviceTime = this.hcm.filters.router.suppressEnvoyHeaders
      ? null
      : String(Math.round(now - (this.requestCompleteAt || this.info.startedAt)));
    const out = downstreamResponseHeaders(
      headers,
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
    this.sink.writeHead(status, headers, contentLength, false, this.attempt?.trailersExpected === true);
    this.info.responseCode = status;
    this.info.responseHeaders = headers;
  }

  upstreamData(chunk: Buffer): void {
    this.timers.active();
    this.tap?.responseBody(chunk);
    if (this.filters !== null) this.filters.encodeData(chunk, false);
    else this.writeBody(chunk);
  }

  /** Response body bytes past the filters, to the downstream; a full one pauses the upstream. */
  private writeBody(chunk: Buffer): void {
    this.info.bytesSent += chunk.length;
    if (!this.sink.writeData(chunk)) this.attempt?.pause();
  }

  upstreamTrailers(trailers: string[]): void {
    this.trailers = trailers;
    if (this.grpc === null) return;
    const status = this.grpc.trailers(trailers);
    // The bridge's 503 for a failed call is what the client gets: counted and logged so.
    if (status > 0) this.responseStatus = this.info.responseCode = status;
  }

  upstreamEnd(): void {
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

  // ---- local replies ----

  resetDownstream(): void {
    this.hcm.stats.rqResetAfterResponseStarted.inc();
    this.hcm.stats.rqTxReset.inc();
    this.sink.reset();
    this.finish(0);
  }

  /** The proxy's own answer in place of the upstream's (dropped), or a reset once the response started. */
  reply(status: number, text: string | Buffer, headers?: string[]): void {
    this.attempt?.drop();
    if (this.sink.headersSent) {
      this.resetDownstream();
      return;
    }
    this.localReply(status, text, headers);
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
    this.attempt?.finish();
    this.timers.end();
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
