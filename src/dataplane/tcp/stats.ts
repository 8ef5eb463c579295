import type { Counter, Gauge, Histogram, Scope } from '../../stats/store.js';
import type { ClusterRuntime } from '../../upstream/types.js';

/** `tcp.<stat_prefix>.` stats, looked up once per filter. */
export interface TcpProxyStats {
  downstream_cx_total: Counter;
  downstream_cx_no_route: Counter;
  downstream_cx_rx_bytes_total: Counter;
  downstream_cx_tx_bytes_total: Counter;
  downstream_flow_control_paused_reading_total: Counter;
  downstream_flow_control_resumed_reading_total: Counter;
  idle_timeout: Counter;
  upstream_flush_total: Counter;
  upstream_flush_active: Gauge;
}

export function tcpProxyStats(scope: Scope): TcpProxyStats {
  return {
    downstream_cx_total: scope.counter('downstream_cx_total'),
    downstream_cx_no_route: scope.counter('downstream_cx_no_route'),
    downstream_cx_rx_bytes_total: scope.counter('downstream_cx_rx_bytes_total'),
    downstream_cx_tx_bytes_total: scope.counter('downstream_cx_tx_bytes_total'),
    downstream_flow_control_paused_reading_total: scope.counter(
      'downstream_flow_control_paused_reading_total',
    ),
    downstream_flow_control_resumed_reading_total: scope.counter(
      'downstream_flow_control_resumed_reading_total',
    ),
    idle_timeout: scope.counter('idle_timeout'),
    upstream_flush_total: scope.counter('upstream_flush_total'),
    upstream_flush_active: scope.gauge('upstream_flush_active'),
  };
}

/** The `cluster.<name>.` connection stats the TCP proxy bumps. */
export interface UpstreamCxStats {
  upstream_cx_total: Counter;
  upstream_cx_active: Gauge;
  upstream_cx_connect_fail: Counter;
  upstream_cx_connect_timeout: Counter;
  upstream_cx_connect_attempts_exceeded: Counter;
  upstream_cx_overflow: Counter;
  upstream_cx_none_healthy: Counter;
  upstream_cx_rx_bytes_total: Counter;
  upstream_cx_tx_bytes_total: Counter;
  upstream_cx_destroy: Counter;
  upstream_cx_destroy_local: Counter;
  upstream_cx_destroy_remote: Counter;
  upstream_flow_control_paused_reading_total: Counter;
  upstream_flow_control_resumed_reading_total: Counter;
  upstream_cx_connect_ms: Histogram;
  upstream_cx_length_ms: Histogram;
  cx_open: Gauge;
}

const byRuntime = new WeakMap<ClusterRuntime, UpstreamCxStats>();

/**
 * The connection stats of a cluster. Names are looked up once per runtime object (a new
 * one comes with each snapshot change of the cluster), never per connection.
 */
export function upstreamCxStats(cluster: ClusterRuntime): UpstreamCxStats {
  const hit = byRuntime.get(cluster);
  if (hit) return hit;
  const s = cluster.scope;
  const stats: UpstreamCxStats = {
    upstream_cx_total: s.counter('upstream_cx_total'),
    upstream_cx_active: s.gauge('upstream_cx_active'),
    upstream_cx_connect_fail: s.counter('upstream_cx_connect_fail'),
    upstream_cx_connect_timeout: s.counter('upstream_cx_connect_timeout'),
    upstream_cx_connect_attempts_exceeded: s.counter('upstream_cx_connect_attempts_exceeded'),
    upstream_cx_overflow: s.counter('upstream_cx_overflow'),
    upstream_cx_none_healthy: s.counter('upstream_cx_none_healthy'),
    upstream_cx_rx_bytes_total: s.counter('upstream_cx_rx_bytes_total'),
    upstream_cx_tx_bytes_total: s.counter('upstream_cx_tx_bytes_total'),
    upstream_cx_destroy: s.counter('upstream_cx_destroy'),
    upstream_cx_destroy_local: s.counter('upstream_cx_destroy_local'),
    upstream_cx_destroy_remote: s.counter('upstream_cx_destroy_remote'),
    upstream_flow_control_paused_reading_total: s.counter('upstream_flow_control_paused_reading_total'),
    upstream_flow_control_resumed_reading_total: s.counter('upstream_flow_control_resumed_reading_total'),
    upstream_cx_connect_ms: s.histogram('upstream_cx_connect_ms'),
    upstream_cx_length_ms: s.histogram('upstream_cx_length_ms'),
    cx_open: s.gauge('circuit_breakers.default.cx_open'),
  };
  byRuntime.set(cluster, stats);
  return stats;
}
