import type { Priority, Thresholds } from '../../../reducers/settings/cluster.js';
import type { Counter, Gauge, Histogram, Scope } from '../../stats/store.js';
import type { ClusterBuild, ClusterRuntime, TrafficFactory, UpstreamHost } from '../../upstream/types.js';
import { Connector } from './connector.js';

/**
 * The circuit breaker of one priority (`circuit_breakers.<default|high>.`): its thresholds,
 * its live counts and its `*_open` gauges. Connections are counted on the DEFAULT breaker
 * only: a host's pool is shared by both priorities, so a connection has no priority of its own.
 */
export class Breaker {
  readonly cxOpen: Gauge;
  readonly rqOpen: Gauge;
  readonly rqPendingOpen: Gauge;
  readonly rqRetryOpen: Gauge;
  connections = 0;
  pending = 0;
  requests = 0;
  retries = 0;
  constructor(
    scope: Scope,
    priority: Priority,
    public limits: Thresholds,
  ) {
    const s = scope.scope(`circuit_breakers.${priority === 'HIGH' ? 'high' : 'default'}`);
    this.cxOpen = s.gauge('cx_open', 'NeverImport');
    this.rqOpen = s.gauge('rq_open', 'NeverImport');
    this.rqPendingOpen = s.gauge('rq_pending_open', 'NeverImport');
    this.rqRetryOpen = s.gauge('rq_retry_open', 'NeverImport');
  }

  refresh(): void {
    const t = this.limits;
    this.cxOpen.set(this.connections >= t.maxConnections ? 1 : 0);
    this.rqOpen.set(this.requests >= t.maxRequests ? 1 : 0);
    this.rqPendingOpen.set(this.pending >= t.maxPendingRequests ? 1 : 0);
    this.rqRetryOpen.set(this.retries >= t.maxRetries ? 1 : 0);
  }
}

/** The connection kinds a cluster counts apart (`upstream_cx_http1_total`, `..._http2_total`). */
export type ConnectionKind = 'http1' | 'http2' | 'tcp';

/**
 * Everything about a cluster's traffic that must outlive a `ClusterRuntime` rebuild: the
 * stats (held by reference), the circuit breaker counts and the per-host counters, and the
 * connector. One per cluster (its runtime's `traffic`, made by `clusterTraffic`), shared by
 * the HTTP pools and the TCP proxy. Counts change only through
 * the `begin*` methods and the `end` of what they return, which also refresh the breaker
 * gauges. Requests, pending requests and retries count against the breaker of their route's
 * `priority` (DEFAULT or HIGH); connections against DEFAULT.
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
  readonly cxConnectAttemptsExceeded: Counter;
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
  /** The newest runtime's outcome reporter, when health follows this cluster's outcomes. */
  outcome: ClusterRuntime['outcome'];
  /** Opens the cluster's connections as its newest runtime says. */
  connector: Connector;
  readonly scope: Scope;
  private readonly codes = new Map<number, Counter>();
  private readonly classes: Counter[];
  private readonly breakers: Record<Priority, Breaker>;

  constructor(cluster: ClusterBuild) {
    const scope = cluster.scope;
    this.scope = scope;
    this.outcome = cluster.outcome;
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
    this.cxConnectAttemptsExceeded = c('upstream_cx_connect_attempts_exceeded');
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
    const thresholds = cluster.settings.thresholds;
    this.breakers = {
      DEFAULT: new Breaker(scope, 'DEFAULT', thresholds.DEFAULT),
      HIGH: new Breaker(scope, 'HIGH', thresholds.HIGH),
    };
    this.connector = new Connector(cluster, this.cxConnectTimeout);
  }

  /** Takes the thresholds and connection settings of a rebuilt runtime of the cluster. */
  follow(cluster: ClusterBuild): void {
    this.breakers.DEFAULT.limits = cluster.settings.thresholds.DEFAULT;
    this.breakers.HIGH.limits = cluster.settings.thresholds.HIGH;
    this.outcome = cluster.outcome;
    this.connector = new Connector(cluster, this.cxConnectTimeout);
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

  /** The breaker thresholds of the newest runtime (DEFAULT priority). */
  get limits(): Thresholds {
    return this.breakers.DEFAULT.limits;
  }

  /** Live connection count (on the DEFAULT breaker). */
  get connections(): number {
    return this.breakers.DEFAULT.connections;
  }

  /** Whether the connection breaker lets one more connection open. */
  get connectionAllowed(): boolean {
    const b = this.breakers.DEFAULT;
    return b.connections < b.limits.maxConnections;
  }

  /** As `connectionAllowed`, counting `upstream_cx_overflow` when it does not. */
  admitConnection(): boolean {
    if (this.connectionAllowed) return true;
    this.cxOverflow.inc();
    this.refreshBreakers();
    return false;
  }

  /** Counts a connection to `host` from the start of its connect until `end`. */
  beginConnection(host: UpstreamHost, kind: ConnectionKind): ConnectionCount {
    this.cxTotal.inc();
    if (kind === 'http1') this.cxHttp1Total.inc();
    else if (kind === 'http2') this.cxHttp2Total.inc();
    this.cxActive.inc();
    const b = this.breakers.DEFAULT;
    b.connections += 1;
    host.stats.cx_total += 1;
    host.stats.cx_active += 1;
    b.refresh();
    return new ConnectionCount(this, host, kind === 'tcp');
  }

  /** Whether the request breaker of `priority` lets one more request go; counts the overflow when not. */
  admitRequest(priority: Priority = 'DEFAULT'): boolean {
    const b = this.breakers[priority];
    if (b.requests < b.limits.maxRequests) return true;
    this.rqPendingOverflow.inc();
    return false;
  }

  /** Counts a request attempt on `host` until `end`. */
  beginRequest(host: UpstreamHost, priority: Priority = 'DEFAULT'): RequestCount {
    const b = this.breakers[priority];
    b.requests += 1;
    this.rqActive.inc();
    this.rqTotal.inc();
    host.stats.rq_total += 1;
    host.stats.rq_active += 1;
    b.refresh();
    return new RequestCount(this, host, b);
  }

  /** Counts a request waiting for a connection until `end`; null (overflow counted) when the breaker is open. */
  beginPending(bounded: boolean, priority: Priority = 'DEFAULT'): Count | null {
    const b = this.breakers[priority];
    if (bounded && b.pending >= b.limits.maxPendingRequests) {
      this.rqPendingOverflow.inc();
      return null;
    }
    this.rqPendingTotal.inc();
    this.rqPendingActive.inc();
    b.pending += 1;
    b.refresh();
    return new Count(b, this.rqPendingActive);
  }

  /** Holds a retry slot until `end`; null (overflow counted) when the retry breaker is open. */
  beginRetry(priority: Priority = 'DEFAULT'): Count | null {
    const b = this.breakers[priority];
    if (b.retries >= b.limits.maxRetries) {
      this.rqRetryOverflow.inc();
      return null;
    }
    b.retries += 1;
    b.refresh();
    return new Count(b, null);
  }

  /** Refreshes the `*_open` gauges after a count changed. */
  refreshBreakers(): void {
    this.breakers.DEFAULT.refresh();
    this.breakers.HIGH.refresh();
  }

  /** The DEFAULT breaker, where connections are counted. */
  get connectionBreaker(): Breaker {
    return this.breakers.DEFAULT;
  }
}

/**
 * A pending request or a retry slot, counted until `end`, which undoes the count once,
 * whatever calls it again. Data rather than an undo closure: one small object per count.
 */
export class Count {
  private open = true;
  constructor(
    private readonly breaker: Breaker,
    /** `upstream_rq_pending_active` for a pending request; null for a retry slot. */
    private readonly pendingActive: Gauge | null,
  ) {}

  end(): void {
    if (!this.open) return;
    this.open = false;
    const b = this.breaker;
    if (this.pendingActive) {
      b.pending -= 1;
      this.pendingActive.dec();
    } else b.retries -= 1;
    b.refresh();
  }
}

/** One upstream connection as its cluster and host count it. */
export class ConnectionCount {
  private readonly openedAt = performance.now();
  private up = false;
  private open = true;
  constructor(
    private readonly traffic: ClusterTraffic,
    readonly host: UpstreamHost,
    /** A TCP proxy connection: its connect is the whole outcome health sees. */
    private readonly proxied: boolean,
  ) {}

  /** Bytes may flow: records the connect time. */
  connected(): void {
    this.up = true;
    if (this.proxied) this.traffic.outcome?.(this.host, 200);
    this.traffic.cxConnectMs.record(Math.round(performance.now() - this.openedAt));
  }

  /** The connection closed; one that never came up counts as the host's connect failure. */
  end(): void {
    if (!this.open) return;
    this.open = false;
    const t = this.traffic;
    t.cxDestroy.inc();
    t.cxActive.dec();
    t.connectionBreaker.connections -= 1;
    t.cxLengthMs.record(Math.round(performance.now() - this.openedAt));
    this.host.stats.cx_active -= 1;
    if (!this.up) {
      this.host.stats.cx_connect_fail += 1;
      if (this.proxied) t.outcome?.(this.host, 0);
    }
    // Connections count on the DEFAULT breaker only: the other one did not change.
    t.connectionBreaker.refresh();
  }
}

/** One request attempt as its cluster and host count it. */
export class RequestCount {
  private readonly startedAt = performance.now();
  private open = true;
  constructor(
    private readonly traffic: ClusterTraffic,
    readonly host: UpstreamHost,
    private readonly breaker: Breaker,
  ) {}

  /** The attempt is over; `status` 0 when it got no response (a host error). */
  end(status: number): void {
    if (!this.open) return;
    this.open = false;
    const t = this.traffic;
    const stats = this.host.stats;
    this.breaker.requests -= 1;
    t.rqActive.dec();
    stats.rq_active -= 1;
    if (status >= 500 || status === 0) stats.rq_error += 1;
    else stats.rq_success += 1;
    if (status > 0) t.recordResponse(status, Math.round(performance.now() - this.startedAt));
    // Only the breaker of the request's priority changed.
    this.breaker.refresh();
    t.outcome?.(this.host, status);
  }
}

/**
 * The data plane's `TrafficFactory`: a cluster's first runtime gets a new record, a rebuilt
 * one the previous record with its counts, bringing its own breaker thresholds and connector.
 * A rebuild under another stat prefix (`alt_stat_name` changed) starts a record on the new
 * stats. Clusters sharing an `alt_stat_name` share their stats but not their breakers or
 * connectors.
 */
export const clusterTraffic: TrafficFactory<ClusterTraffic> = (cluster, previous) => {
  const { scope } = cluster;
  if (!previous || previous.scope.store !== scope.store || previous.scope.prefix !== scope.prefix)
    return new ClusterTraffic(cluster);
  previous.follow(cluster);
  return previous;
};

/**
 * Finds the live runtime of a cluster by name, carrying its traffic record; provided by the
 * upstream cluster manager built with the `clusterTraffic` factory.
 */
export interface ClusterLookup {
  get(name: string): ClusterRuntime<ClusterTraffic> | undefined;
}
