import { FLAG, joinHostPort, newStreamInfo, type StreamInfo } from '../access-log/stream-info.js';
import { reasonPhrase } from '../codec/h1-status.js';
import type { HttpRequest, ResponseSink } from '../codec/request.js';
import { findRoute } from '../router/lookup.js';
import type { CompiledRoute } from '../router/table.js';
import type { TracedRequest } from '../tracing/tracer.js';
import type { DownstreamOwner } from './downstream.js';
import { appendVia, applyEdge } from './edge.js';
import { requestFilters } from './filters/api.js';
import type { FilterChainEnds } from './filters/chain-ends.js';
import { RouterFilter, type RouterStream } from './filters/router/route.js';
import { FilterRunner } from './filters/runner.js';
import { answerBeforeFilters, checkHead } from './head-checks.js';
import { downstreamResponseHeaders } from './headers.js';
import { type ReplyingStream, sendStreamReply } from './stream-reply.js';
import type { TimerTarget } from './stream-timer.js';
import { DURATION_TIMEOUT, REQUEST_TIMEOUT, type StreamTimers } from './stream-timers.js';

/** The text of each stream timeout's 408, by its kind (src/dataplane/http/stream-timers.ts). */
const STREAM_TIMEOUT_TEXT = ['stream timeout', 'request timeout', 'downstream duration timeout'];
/** `%RESPONSE_CODE_DETAILS%` of each, by the same index. */
const STREAM_TIMEOUT_DETAILS = ['stream_idle_timeout', 'request_overall_timeout', 'max_duration_timeout'];
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
 * router (the overload and health-check answers, then the chain of
 * src/dataplane/http/filters/runner.ts), the router filter (filters/router/route.ts) and its
 * upstream attempt (filters/router/upstream-attempt.ts), the stream's timers, the response's
 * way back through the encoders, the proxy's own replies and the request's record.
 */
export class Exchange implements TimerTarget, FilterChainEnds, RouterStream, ReplyingStream {
  /** True once the request was answered or reset: every callback after it is ignored. */
  ended = false;
  /** The per-request filters (src/dataplane/http/filters/api.ts); null when the chain has none. */
  filters: FilterRunner | null = null;
  /** The chain's last filter: the route, and the upstream attempt once it has a cluster. */
  readonly router: RouterFilter;
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
  /** This request's span when the connection manager traces; null otherwise. */
  private trace: TracedRequest | null = null;
  /** What the edge step found (`EDGE_*` bits of src/dataplane/http/edge.ts). */
  edge = 0;
  /** When the whole request had arrived, for `x-proxy-upstream-service-time`; 0 before. */
  private requestCompleteAt = 0;
  /** The response body's length as the downstream gets it (-1: unknown); the encoders may change it. */
  responseLength = -1;

  constructor(
    readonly hcm: DownstreamOwner,
    readonly req: HttpRequest,
    readonly sink: ResponseSink,
    readonly owner: ExchangeOwner,
  ) {
    this.info = newStreamInfo(
      req,
      req.remoteAddress ?? joinHostPort(req.remoteIp, req.remotePort),
      req.localAddress ?? '',
    );
    if (!req.hasBody) this.requestCompleteAt = this.info.startedAt;
    hcm.stats.requestStarted(req.protocol === 'HTTP/2');
    this.router = new RouterFilter(this);
    this.timers = owner.timers;
    this.timers.begin(this, hcm.timeouts, req.hasBody);
  }

  /** Runs the filter chain; errors answer 500 rather than escaping to the socket. */
  start(): void {
    try {
      this.decodeHeaders();
    } catch (err) {
      this.hcm.log.error({ err }, 'request handling failed');
      this.sendLocalReply(500, 'internal error\n');
    }
  }

  private decodeHeaders(): void {
    const hcm = this.hcm;
    const req = this.req;
    const refused = checkHead(hcm, req);
    if (refused !== null) {
      this.localReply(refused.status, refused.body, refused.headers);
      return;
    }
    this.edge = applyEdge(req, hcm.spec.edge, hcm.localAddress, hcm.routes.internalOnlyHeaders, this.info);
    // Before the upstream head is built: the span's context is written into the request's headers.
    if (hcm.tracer !== null) this.trace = hcm.tracer.start(req);
    const answer = answerBeforeFilters(hcm, req, this.info);
    if (answer !== null) {
      this.localReply(answer.status, answer.body, answer.headers);
      return;
    }
    this.router.hit = findRoute(hcm.routes, req);
    const filters = hcm.streamFilters === null ? null : requestFilters(hcm.streamFilters);
    if (filters === null) {
      this.router.decodeHeaders();
      return;
    }
    this.filters = new FilterRunner(filters, this);
    this.filters.decodeHeaders();
  }

  // ---- FilterChainEnds: what the per-request filters run between ----

  get bufferLimit(): number {
    return this.hcm.deps.bufferLimitBytes ?? DEFAULT_BUFFER_LIMIT;
  }

  /** A filter's answer at any point: the upstream attempt, if one is under way, is dropped. */
  sendLocalReply(status: number, body: string, headers?: string[], grpcStatus?: number): void {
    if (!this.ended) this.reply(status, body, headers, grpcStatus);
  }

  /** The response head past the filters, to the downstream. */
  encodedHeaders(status: number, headers: string[]): void {
    const trailers = this.router.attempt?.trailersExpected === true;
    this.sink.writeHead(status, headers, this.responseLength, false, trailers);
    // An encoder may have changed it (the gRPC bridge's 503): counted and logged as sent.
    this.responseStatus = status;
    this.info.responseCode = status;
    this.info.responseHeaders = headers;
  }

  /** Response body bytes past the filters, to the downstream; a full one pauses the upstream. */
  encodedData(chunk: Buffer, end: boolean): void {
    if (chunk.length > 0) {
      this.info.bytesSent += chunk.length;
      if (!this.sink.writeData(chunk)) this.router.attempt?.pause();
    }
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
    if (above) this.router.attempt?.pause();
    else this.router.attempt?.resume();
  }

  decodeTooLarge(): void {
    this.hcm.stats.rqTooLarge.inc();
    this.sendLocalReply(413, 'Payload Too Large');
  }

  encodeTooLarge(): void {
    this.hcm.stats.rsTooLarge.inc();
    this.sendLocalReply(500, 'Internal Server Error');
  }

  // ---- RouterStream: what the router filter and its attempt use ----

  routed(route: CompiledRoute): void {
    this.info.routeName = route.name;
    if (route.idleTimeoutMs !== null) this.timers.replaceIdle(route.idleTimeoutMs, this);
  }

  /**
   * The HCM's `request_timeout`, `stream_idle_timeout` or `max_stream_duration` fired: 408
   * before the response starts, as the reference answers all three, then a reset stream.
   */
  onTimer(kind: number): void {
    if (this.ended) return;
    const s = this.hcm.stats;
    if (kind === REQUEST_TIMEOUT) s.rqTimeout.inc();
    else if (kind === DURATION_TIMEOUT) s.rqMaxDurationReached.inc();
    else {
      s.rqIdleTimeout.inc();
      this.info.flags |= FLAG.SI;
    }
    this.router.attempt?.cancel();
    this.info.details = STREAM_TIMEOUT_DETAILS[kind] as string;
    this.reply(408, STREAM_TIMEOUT_TEXT[kind] as string);
  }

  // ---- downstream body ----

  /** Request body bytes from the codec. */
  onBody(chunk: Buffer): void {
    if (this.ended) return;
    this.timers.active();
    this.bodyBytes += chunk.length;
    (this.filters ?? this.router).decodeData(chunk, false);
  }

  onBodyEnd(): void {
    // `requestCompleteAt` is set once the downstream sent the whole request (at once without a body).
    if (this.ended || this.requestCompleteAt !== 0) return;
    this.requestCompleteAt = performance.now();
    this.timers.requestDone();
    const next = this.filters ?? this.router;
    if (this.requestTrailers !== undefined) next.decodeTrailers(this.requestTrailers);
    else next.decodeData(EMPTY, true);
  }

  /** The request's trailers (HTTP/2), just before its end. */
  onRequestTrailers(trailers: string[]): void {
    this.requestTrailers = trailers;
  }

  /** The downstream stream went away (client reset or closed). */
  onDownstreamReset(): void {
    if (this.ended) return;
    this.hcm.stats.rqRxReset.inc();
    this.info.flags |= FLAG.DC;
    // Over a response under way too (`via_upstream`), as the reference's connection close does.
    this.info.details = 'downstream_remote_disconnect';
    this.router.attempt?.cancel();
    this.finish(0);
  }

  /**
   * The codec found the request's body malformed (a bad chunk): the upstream attempt is
   * dropped and, when no response has started, the client is answered `status` (`DPE`), as
   * the reference's codec answers before closing; otherwise the response is cut.
   */
  onDownstreamProtocolError(status: number): void {
    if (this.ended) return;
    this.info.flags |= FLAG.DPE;
    this.info.details = 'http1.codec_error';
    this.router.attempt?.cancel();
    // The status text as body, as the reference's codec's local reply.
    this.reply(status, reasonPhrase(status));
  }

  /** The downstream can take more response bytes. */
  onDownstreamDrain(): void {
    this.router.attempt?.resume();
  }

  // ---- the upstream response, from the attempt ----

  upstreamHead(status: number, headers: string[], contentLength: number): void {
    this.timers.requestDone();
    this.timers.active();
    const { hcm, info } = this;
    const now = performance.now();
    const serviceTime = hcm.filters.router.suppressEnvoyHeaders
      ? null
      : String(Math.round(now - (this.requestCompleteAt || info.startedAt)));
    const out = downstreamResponseHeaders(headers, hcm.serverName, serviceTime, hcm.spec.serverHeader);
    if (hcm.spec.edge.via) appendVia(out, hcm.spec.edge.via);
    this.responseStatus = status;
    info.firstUpstreamByteAt = now;
    this.responseLength = contentLength;
    if (this.filters === null) this.encodedHeaders(status, out);
    else this.filters.encodeHeaders(status, out);
  }

  upstreamData(chunk: Buffer): void {
    this.timers.active();
    if (this.filters !== null) this.filters.encodeData(chunk, false);
    else this.encodedData(chunk, false);
  }

  upstreamTrailers(trailers: string[]): void {
    this.trailers = trailers;
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
  reply(status: number, text: string | Buffer, headers?: string[], grpcStatus?: number): void {
    this.router.attempt?.drop();
    if (this.sink.headersSent) {
      this.resetDownstream();
      return;
    }
    this.localReply(status, text, headers, grpcStatus);
  }

  /** A response made by the proxy itself (src/dataplane/http/stream-reply.ts), and the request's end. */
  private localReply(status: number, body: string | Buffer, extra?: string[], grpcStatus?: number): void {
    // As the reference: a 400 is an invalid message, and ends an HTTP/1 connection unless
    // `stream_error_on_invalid_http_message` (or its HTTP/1 override) says otherwise.
    if (status === 400) this.owner.onInvalidMessage?.();
    this.finish(sendStreamReply(this, status, body, extra, grpcStatus));
  }

  private finish(status: number): void {
    if (this.ended) return;
    this.ended = true;
    this.filters?.destroy();
    this.router.attempt?.finish();
    this.timers.end();
    // One clock read for the histogram and the access log (the stream info's start is ours).
    const now = performance.now();
    this.info.endedAt = now;
    this.hcm.stats.requestEnded(status, now - this.info.startedAt);
    this.info.bytesReceived = this.bodyBytes;
    this.hcm.onStreamEnd(this.info);
    this.trace?.finish(this.info, this.router.route);
    this.owner.onExchangeDone(this);
  }
}
