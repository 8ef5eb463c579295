import type { Counter, Gauge, Histogram, Scope } from '../../stats/store.js';

/** The `http.<stat_prefix>.` stats of one connection manager, held by reference. */
export class HcmStats {
  readonly cxTotal: Counter;
  readonly cxActive: Gauge;
  readonly cxHttp1Total: Counter;
  readonly cxHttp2Total: Counter;
  readonly cxHttp1Active: Gauge;
  readonly cxHttp2Active: Gauge;
  /** Connections that arrived over TLS (the listener's chain terminated it), in total and now. */
  readonly cxSslTotal: Counter;
  readonly cxSslActive: Gauge;
  readonly cxProtocolError: Counter;
  readonly cxDestroy: Counter;
  readonly cxDestroyLocal: Counter;
  readonly cxDestroyRemote: Counter;
  readonly cxDrainClose: Counter;
  readonly cxRxBytes: Counter;
  readonly cxTxBytes: Counter;
  readonly cxLengthMs: Histogram;
  readonly rqTotal: Counter;
  readonly rqHttp1Total: Counter;
  readonly rqHttp2Total: Counter;
  readonly rqActive: Gauge;
  readonly rqCompleted: Counter;
  readonly rqTooLarge: Counter;
  /** Responses an HTTP filter's buffer could not hold (`rs_too_large`). */
  readonly rsTooLarge: Counter;
  readonly rqRxReset: Counter;
  readonly rqTxReset: Counter;
  readonly rqTime: Histogram;
  readonly rqClasses: Counter[];
  readonly noRoute: Counter;
  readonly noCluster: Counter;
  readonly rqRedirect: Counter;
  readonly rqDirectResponse: Counter;
  readonly routerRqTotal: Counter;
  readonly rqResetAfterResponseStarted: Counter;
  readonly rqTimeout: Counter;
  readonly rqIdleTimeout: Counter;
  /** Requests answered 503 while the overload action stop_accepting_requests is active. */
  readonly rqOverloadClose: Counter;
  /** `headers_with_underscores_action`: requests answered 400, headers dropped. */
  readonly rqRejectedUnderscores: Counter;
  readonly droppedUnderscores: Counter;
  /** Requests whose path is not `/`-led (`*`, or an absolute URL with `allow_absolute_url: false`): 404. */
  readonly rqNonRelativePath: Counter;
  /** Requests answered 307 to their unescaped path (`UNESCAPE_AND_REDIRECT`). */
  readonly rqRedirectedNormalizedPath: Counter;
  /** Streams ended by `common_http_protocol_options.max_stream_duration`. */
  readonly rqMaxDurationReached: Counter;
  /** HTTP/1 connections closed after their response while disable_http_keepalive is active. */
  readonly cxOverloadDisableKeepalive: Counter;
  readonly rqHeaderTimeout: Counter;
  readonly cxIdleTimeout: Counter;
  readonly cxMaxDurationReached: Counter;
  /** Connections handed to an upgrade tunnel (WebSocket), in total and now. */
  readonly cxUpgradesTotal: Counter;
  readonly cxUpgradesActive: Gauge;

  constructor(scope: Scope) {
    const c = (n: string) => scope.counter(n);
    this.cxTotal = c('downstream_cx_total');
    this.cxActive = scope.gauge('downstream_cx_active');
    this.cxHttp1Total = c('downstream_cx_http1_total');
    this.cxHttp2Total = c('downstream_cx_http2_total');
    this.cxHttp1Active = scope.gauge('downstream_cx_http1_active');
    this.cxHttp2Active = scope.gauge('downstream_cx_http2_active');
    this.cxSslTotal = c('downstream_cx_ssl_total');
    this.cxSslActive = scope.gauge('downstream_cx_ssl_active');
    this.cxProtocolError = c('downstream_cx_protocol_error');
    this.cxDestroy = c('downstream_cx_destroy');
    this.cxDestroyLocal = c('downstream_cx_destroy_local');
    this.cxDestroyRemote = c('downstream_cx_destroy_remote');
    this.cxDrainClose = c('downstream_cx_drain_close');
    this.cxRxBytes = c('downstream_cx_rx_bytes_total');
    this.cxTxBytes = c('downstream_cx_tx_bytes_total');
    this.cxLengthMs = scope.histogram('downstream_cx_length_ms');
    this.rqTotal = c('downstream_rq_total');
    this.rqHttp1Total = c('downstream_rq_http1_total');
    this.rqHttp2Total = c('downstream_rq_http2_total');
    this.rqActive = scope.gauge('downstream_rq_active');
    this.rqCompleted = c('downstream_rq_completed');
    this.rqTooLarge = c('downstream_rq_too_large');
    this.rsTooLarge = c('rs_too_large');
    this.rqRxReset = c('downstream_rq_rx_reset');
    this.rqTxReset = c('downstream_rq_tx_reset');
    this.rqTime = scope.histogram('downstream_rq_time');
    this.rqClasses = [1, 2, 3, 4, 5].map((n) => c(`downstream_rq_${n}xx`));
    this.noRoute = c('no_route');
    this.noCluster = c('no_cluster');
    this.rqRedirect = c('rq_redirect');
    this.rqDirectResponse = c('rq_direct_response');
    this.routerRqTotal = c('rq_total');
    this.rqResetAfterResponseStarted = c('rq_reset_after_downstream_response_started');
    this.rqTimeout = c('downstream_rq_timeout');
    this.rqIdleTimeout = c('downstream_rq_idle_timeout');
    this.rqOverloadClose = c('downstream_rq_overload_close');
    this.rqRejectedUnderscores = c('requests_rejected_with_underscores_in_headers');
    this.droppedUnderscores = c('dropped_headers_with_underscores');
    this.rqNonRelativePath = c('downstream_rq_non_relative_path');
    this.rqRedirectedNormalizedPath = c('downstream_rq_redirected_with_normalized_path');
    this.rqMaxDurationReached = c('downstream_rq_max_duration_reached');
    this.cxOverloadDisableKeepalive = c('downstream_cx_overload_disable_keepalive');
    this.rqHeaderTimeout = c('downstream_rq_header_timeout');
    this.cxUpgradesTotal = c('downstream_cx_upgrades_total');
    this.cxUpgradesActive = scope.gauge('downstream_cx_upgrades_active');
    this.cxIdleTimeout = c('downstream_cx_idle_timeout');
    this.cxMaxDurationReached = c('downstream_cx_max_duration_reached');
  }

  /** A request began on a stream. */
  requestStarted(http2: boolean): void {
    this.rqTotal.inc();
    this.rqActive.inc();
    (http2 ? this.rqHttp2Total : this.rqHttp1Total).inc();
  }

  /** A request ended after `ms`; `status` 0 when it got no response (reset). */
  requestEnded(status: number, ms: number): void {
    this.rqActive.dec();
    if (status > 0) {
      this.rqClasses[Math.floor(status / 100) - 1]?.inc();
      this.rqCompleted.inc();
    }
    this.rqTime.record(Math.round(ms));
  }
}
