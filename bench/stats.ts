/**
 * Stats rendering at scale: 10,000 clusters with about a hundred stats each (about 1M
 * stats). Times `/stats` text, JSON and Prometheus, with `usedonly` and with a filter
 * matching one cluster, and the heap each cluster's stats take.
 */
import { pathToFileURL } from 'node:url';
import { StatsStore } from '../src/stats/store.js';
import { TagProducer } from '../src/stats/tags.js';
import { streamStats } from '../views/stats/index.js';
import type { BenchRow } from './types.js';

const CLUSTERS = 10_000;

const COUNTERS =
  `assignment_stale assignment_timeout_received bind_errors lb_healthy_panic lb_local_cluster_not_ok
lb_recalculate_zone_structures lb_subsets_created lb_subsets_fallback lb_subsets_fallback_panic lb_subsets_removed
lb_subsets_selected lb_zone_cluster_too_small lb_zone_no_capacity_left lb_zone_number_differs
lb_zone_routing_all_directly lb_zone_routing_cross_zone lb_zone_routing_sampled membership_change
original_dst_host_invalid retry_or_shadow_abandoned update_attempt update_empty update_failure update_no_rebuild
update_success upstream_cx_close_notify upstream_cx_connect_attempts_exceeded upstream_cx_connect_fail
upstream_cx_connect_timeout upstream_cx_destroy upstream_cx_destroy_local upstream_cx_destroy_local_with_active_rq
upstream_cx_destroy_remote upstream_cx_destroy_remote_with_active_rq upstream_cx_destroy_with_active_rq
upstream_cx_http1_total upstream_cx_http2_total upstream_cx_idle_timeout upstream_cx_max_requests
upstream_cx_none_healthy upstream_cx_overflow upstream_cx_pool_overflow upstream_cx_protocol_error
upstream_cx_rx_bytes_total upstream_cx_total upstream_cx_tx_bytes_total upstream_flow_control_backed_up_total
upstream_flow_control_drained_total upstream_flow_control_paused_reading_total
upstream_flow_control_resumed_reading_total upstream_internal_redirect_failed_total
upstream_internal_redirect_succeeded_total upstream_rq_cancelled upstream_rq_completed
upstream_rq_maintenance_mode upstream_rq_max_duration_reached upstream_rq_pending_failure_eject
upstream_rq_pending_overflow upstream_rq_pending_total upstream_rq_per_try_timeout upstream_rq_retry
upstream_rq_retry_limit_exceeded upstream_rq_retry_overflow upstream_rq_retry_success upstream_rq_rx_reset
upstream_rq_timeout upstream_rq_total upstream_rq_tx_reset upstream_rq_200 upstream_rq_2xx upstream_rq_503
upstream_rq_5xx health_check.attempt health_check.failure health_check.network_failure
health_check.passive_failure health_check.success health_check.verify_cluster
outlier_detection.ejections_enforced_total outlier_detection.ejections_total
outlier_detection.ejections_overflow outlier_detection.ejections_detected_consecutive_5xx
outlier_detection.ejections_enforced_consecutive_5xx`.split(/\s+/);
const GAUGES = `lb_subsets_active max_host_weight membership_degraded membership_excluded membership_healthy
membership_total upstream_cx_active upstream_cx_rx_bytes_buffered upstream_cx_tx_bytes_buffered
upstream_rq_active upstream_rq_pending_active version circuit_breakers.default.cx_open
circuit_breakers.default.cx_pool_open circuit_breakers.default.rq_open circuit_breakers.default.rq_pending_open
circuit_breakers.default.rq_retry_open circuit_breakers.high.cx_open circuit_breakers.high.rq_open
health_check.healthy health_check.degraded outlier_detection.ejections_active`.split(/\s+/);
const HISTOGRAMS = ['upstream_cx_connect_ms', 'upstream_cx_length_ms', 'upstream_rq_time'];

/**
 * Renders as the admin writes: piece by piece, each dropped once counted (the admin hands it
 * to the socket); the time is the whole render, the longest piece says how long the event
 * loop was held at once.
 */
function time(fn: () => string | Buffer | Iterable<string>): {
  ms: number;
  cpuMs: number;
  bytes: number;
  longestMs: number;
} {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const body = fn();
  let bytes = 0;
  let longestMs = 0;
  if (typeof body === 'string' || Buffer.isBuffer(body)) bytes = body.length;
  else {
    let at = t0;
    for (const piece of body) {
      bytes += piece.length;
      const now = performance.now();
      longestMs = Math.max(longestMs, now - at);
      at = now;
    }
  }
  const cpu = process.cpuUsage(cpu0);
  return { ms: performance.now() - t0, cpuMs: (cpu.user + cpu.system) / 1000, bytes, longestMs };
}

/** The store of `CLUSTERS` clusters the renders read. */
export function buildStore(): StatsStore {
  const store = new StatsStore();
  for (let i = 0; i < CLUSTERS; i++) {
    const scope = store.scope(`cluster.service_${i}`);
    for (const c of COUNTERS) scope.counter(c);
    for (const g of GAUGES) scope.gauge(g);
    for (const h of HISTOGRAMS) scope.histogram(h);
    // a tenth of the clusters carry traffic, so usedonly has something to skip
    if (i % 10 === 0) {
      scope.counter('upstream_rq_total').add(i);
      scope.gauge('upstream_cx_active').set(1);
      scope.histogram('upstream_rq_time').record(i % 1000);
    }
  }
  store.flush();
  return store;
}

/** Builds the store, renders it every way, and reports times and memory per cluster. */
export async function benchStats(): Promise<BenchRow[]> {
  globalThis.gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const store = buildStore();
  globalThis.gc?.();
  const heapPerCluster = (process.memoryUsage().heapUsed - heapBefore) / CLUSTERS;
  const total = store.counters.size + store.gauges.size + store.histograms.size;
  const tags = new TagProducer();
  const render = (query: string) => () => streamStats(store, tags, new URLSearchParams(query)).body;
  const rows: BenchRow[] = [
    { name: 'stats: stats held', value: total, unit: 'stats', note: `${CLUSTERS} clusters` },
    {
      name: 'stats: heap per cluster',
      value: Math.round(heapPerCluster),
      unit: 'bytes',
      note: 'run with --expose-gc for a steadier figure',
    },
  ];
  const cases: Array<[string, string]> = [
    ['text (first, sorts names)', ''],
    ['text', ''],
    ['text usedonly', 'usedonly'],
    ['text filter one cluster', 'filter=^cluster\\.service_4242\\.'],
    ['json', 'format=json'],
    ['json usedonly', 'format=json&usedonly'],
    ['prometheus (first, extracts tags)', 'format=prometheus'],
    ['prometheus', 'format=prometheus'],
    ['prometheus usedonly', 'format=prometheus&usedonly'],
  ];
  for (const [name, query] of cases) {
    const { ms, cpuMs, bytes, longestMs } = time(render(query));
    rows.push({
      name: `stats: /stats ${name}`,
      value: ms,
      unit: 'ms',
      ratio: ms / 500,
      note: `target <= 500 ms (ratio = value / target); CPU ${cpuMs.toFixed(0)} ms; ${(bytes / 1e6).toFixed(1)} MB; longest piece ${longestMs.toFixed(1)} ms (longest hold of the event loop; the first render after new stats sorts their names in one block)`,
    });
  }
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const row of await benchStats()) {
    process.stdout.write(
      `${row.name}: ${row.value.toFixed?.(1) ?? row.value} ${row.unit}${row.note ? ` (${row.note})` : ''}\n`,
    );
  }
}
