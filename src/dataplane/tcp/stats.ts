import type { Counter, Gauge, Scope } from '../../stats/store.js';

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
