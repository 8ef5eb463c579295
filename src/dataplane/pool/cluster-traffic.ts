import type { Priority, Thresholds } from '../../../reducers/settings/cluster.js';
import type { Counter, Gauge, Histogram, Scope } from '../../stats/store.js';
import type { ClusterRuntime } from '../../upstream/types.js';

/** The circuit breaker gauges of one priority (`circuit_breakers.<default|high>.`). */
class BreakerGauges {
  readonly cxOpen: Gauge;
  readonly rqOpen: Gauge;
  readonly rqPendingOpen: Gauge;
  readonly rqRetryOpen: Gauge;
  constructor(scope: Scope, priority: Priority) {
    const s = scope.scope(`circuit_breakers.${priority === 'HIGH' ? 'high' : 'default'}`);
    this.cxOpen = s.gauge('cx_open', 'NeverImport');
    this.rqOpen = s.gauge('rq_open', 'NeverImport');
    this.rqPendingOpen = s.gauge('rq_pending_open', 'NeverImport');
    this.rqRetryOpen = s.gauge('rq_retry_open', 'NeverImport');
  }
}

/**
 * Everything about a cluster's traffic that must outlive a `ClusterRuntime` rebuild: the
 * stats (held by reference) and the circuit breaker counts. One per cluster stat prefix.
 * Only the default priority carries traffic: routes do not select `HIGH` yet.
 */
export class ClusterTraffic {
  readonly rqTotal: Counter;
  readonly rqCompleted: Counter;
  readonly rqActive: Gauge;
  readonly rqPendingTotal: Counter;
  readonly rqPendingActive: Gauge;
  readonly rqPendingOverflow: Counter;
  readonly rqTimeout: Counter;
  readonly rqPerTryTimeout: Counter;
  readonly rqRetry: Counter;
  readonly rqRetrySuccess: Counter;
  readonly rqRetryOverflow: Counter;
  readonly rqRetryLimitExceeded: Counter;
  /** Requests sent again on a new connection after a reused one closed before any response byte. */
  readonly rqRetryReusedConnection: Counter;
  readonly rqRxReset: Counter;
  readonly rqTxReset: Counter;
  readonly rqCancelled: Counter;
  readonly rqTime: Histogram;
  readonly cxTotal: Counter;
  readonly cxActive: Gauge;
  readonly cxHttp1Total: Counter;
  readonly cxHttp2Total: Counter;
  readonly cxConnectFail: Counter;
  readonly cxConnectTimeout: Counter;
  readonly cxConnectMs: Histogram;
  readonly cxLengthMs: Histogram;
  readonly cxOverflow: Counter;
  readonly cxNoneHealthy: Counter;
  readonly cxMaxRequests: Counter;
  readonly cxIdleTimeout: Counter;
  readonly cxDestroy: Counter;
  readonly cxDestroyLocal: Counter;
  readonly cxDestroyRemote: Counter;
  readonly cxDestroyWithActiveRq: Counter;
  readonly cxProtocolError: Counter;
  readonly cxRxBytes: Counter;
  readonly cxTxBytes: Counter;
  readonly bindErrors: Counter;
  readonly flowPaused: Counter;
  readonly flowResumed: Counter;
  private readonly codes = new Map<number, Counter>();
  private readonly classes: Counter[];
  private readonly breakers: BreakerGauges;

  /** Live circuit breaker counts (default priority). */
  connections = 0;
  pending = 0;
  requests = 0;
  retries = 0;

  constructor(readonly scope: Scope) {
    const c = (n: string) => scope.counter(n);
    this.rqTotal = c('upstream_rq_total');
    this.rqCompleted = c('upstream_rq_completed');
    this.rqActive = scope.gauge('upstream_rq_active');
    this.rqPendingTotal = c('upstream_rq_pending_total');
    this.rqPendingActive = scope.gauge('upstream_rq_pending_active');
    this.rqPendingOverflow = c('upstream_rq_pending_overflow');
    this.rqTimeout = c('upstream_rq_timeout');
    this.rqPerTryTimeout = c('upstream_rq_per_try_timeout');
    this.rqRetry = c('upstream_rq_retry');
    this.rqRetrySuccess = c('upstream_rq_retry_success');
    this.rqRetryOverflow = c('upstream_rq_retry_overflow');
    this.rqRetryLimitExceeded = c('upstream_rq_retry_limit_exceeded');
    this.rqRetryReusedConnection = c('upstream_rq_retry_reused_connection');
    this.rqRxReset = c('upstream_rq_rx_reset');
    this.rqTxReset = c('upstream_rq_tx_reset');
    this.rqCancelled = c('upstream_rq_cancelled');
    this.rqTime = scope.histogram('upstream_rq_time');
    this.cxTotal = c('upstream_cx_total');
    this.cxActive = scope.gauge('upstream_cx_active');
    this.cxHttp1Total = c('upstream_cx_http1_total');
    this.cxHttp2Total = c('upstream_cx_http2_total');
    this.cxConnectFail = c('upstream_cx_connect_fail');
    this.cxConnectTimeout = c('upstream_cx_connect_timeout');
    this.cxConnectMs = scope.histogram('upstream_cx_connect_ms');
    this.cxLengthMs = scope.histogram('upstream_cx_length_ms');
    this.cxOverflow = c('upstream_cx_overflow');
    this.cxNoneHealthy = c('upstream_cx_none_healthy');
    this.cxMaxRequests = c('upstream_cx_max_requests');
    this.cxIdleTimeout = c('upstream_cx_idle_timeout');
    this.cxDestroy = c('upstream_cx_destroy');
    this.cxDestroyLocal = c('upstream_cx_destroy_local');
    this.cxDestroyRemote = c('upstream_cx_destroy_remote');
    this.cxDestroyWithActiveRq = c('upstream_cx_destroy_with_active_rq');
    this.cxProtocolError = c('upstream_cx_protocol_error');
    this.cxRxBytes = c('upstream_cx_rx_bytes_total');
    this.cxTxBytes = c('upstream_cx_tx_bytes_total');
    this.bindErrors = c('bind_errors');
    this.flowPaused = c('upstream_flow_control_paused_reading_total');
    this.flowResumed = c('upstream_flow_control_resumed_reading_total');
    this.classes = [1, 2, 3, 4, 5].map((n) => c(`upstream_rq_${n}xx`));
    this.breakers = new BreakerGauges(scope, 'DEFAULT');
    new BreakerGauges(scope, 'HIGH');
  }

  /** Counts a response code: `upstream_rq_<code>`, `upstream_rq_<N>xx`, `upstream_rq_completed`. */
  recordResponse(status: number, elapsedMs: number): void {
    let counter = this.codes.get(status);
    if (!counter) {
      counter = this.scope.counter(`upstream_rq_${status}`);
      this.codes.set(status, counter);
    }
    counter.inc();
    this.classes[Math.floor(status / 100) - 1]?.inc();
    this.rqCompleted.inc();
    this.rqTime.record(elapsedMs);
  }

  /** Refreshes the `*_open` gauges after a count changed. */
  refreshBreakers(t: Thresholds): void {
    const b = this.breakers;
    b.cxOpen.set(this.connections >= t.maxConnections ? 1 : 0);
    b.rqOpen.set(this.requests >= t.maxRequests ? 1 : 0);
    b.rqPendingOpen.set(this.pending >= t.maxPendingRequests ? 1 : 0);
    b.rqRetryOpen.set(this.retries >= t.maxRetries ? 1 : 0);
  }
}

const registry = new WeakMap<Scope, ClusterTraffic>();
const byPrefix = new Map<string, ClusterTraffic>();

/**
 * The traffic record of a cluster. Looked up by the runtime's scope object first (one
 * WeakMap hit per request), then by stat prefix, so a rebuilt runtime keeps its counts.
 */
export function trafficOf(cluster: ClusterRuntime): ClusterTraffic {
  const hit = registry.get(cluster.scope);
  if (hit) return hit;
  let traffic = byPrefix.get(cluster.scope.prefix);
  if (!traffic || traffic.scope.store !== cluster.scope.store) {
    traffic = new ClusterTraffic(cluster.scope);
    byPrefix.set(cluster.scope.prefix, traffic);
  }
  registry.set(cluster.scope, traffic);
  return traffic;
}
