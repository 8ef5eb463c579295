import type { State } from '../../reducers/state.js';
import { omitDefaults, socketAddress } from '../proto-json.js';
import { type StreamedResult, streamedProtoJson } from '../result.js';
import { type ClustersFigures, GAUGES, HOST_STAT_NAMES } from './figures.js';
import { type HostView, selectClusters } from './select.js';

function edsHealthStatus(h: HostView): string {
  const eds = h.host.edsHealth;
  return eds === 'UNKNOWN' ? 'HEALTHY' : eds;
}

function hostStatus(h: HostView) {
  const counters = HOST_STAT_NAMES.filter((n) => !GAUGES.has(n));
  const gauges = HOST_STAT_NAMES.filter((n) => GAUGES.has(n));
  // SimpleMetric: type COUNTER is the default (absent); uint64 values are strings, 0 absent.
  const metric = (name: (typeof HOST_STAT_NAMES)[number], type?: string) => ({
    type,
    value: h.counters[name] ? String(h.counters[name]) : undefined,
    name,
  });
  return {
    address: socketAddress(h.host.address),
    stats: [...counters.map((n) => metric(n)), ...gauges.map((n) => metric(n, 'GAUGE'))],
    health_status: {
      failed_active_health_check: h.host.failedActiveHc,
      failed_outlier_check: h.host.failedOutlierCheck,
      failed_active_degraded_check: h.host.degradedActiveHc === true,
      pending_dynamic_removal: h.host.pendingDynamicRemoval === true,
      pending_active_hc: h.host.pendingActiveHc === true,
      eds_health_status: edsHealthStatus(h),
    },
    success_rate: h.successRate >= 0 ? { value: h.successRate } : undefined,
    weight: h.host.weight,
    hostname: h.host.hostname,
    priority: h.host.priority,
    local_origin_success_rate:
      h.localOriginSuccessRate >= 0 ? { value: h.localOriginSuccessRate } : undefined,
    locality: h.host.locality,
  };
}

/** `/clusters?format=json`: `{ cluster_statuses: [...] }` with default-valued fields omitted. */
export function renderClustersJson(state: State, figures: ClustersFigures): StreamedResult {
  return streamedProtoJson(clusterStatuses(state, figures));
}

/** What `/clusters?format=json` prints, as data. */
export function clustersData(state: State, figures: ClustersFigures): { cluster_statuses: unknown[] } {
  return omitDefaults(clusterStatuses(state, figures));
}

function clusterStatuses(state: State, figures: ClustersFigures): { cluster_statuses: unknown[] } {
  const statuses = selectClusters(state, figures).map((c) => ({
    name: c.entry.name,
    added_via_api: c.entry.addedViaApi,
    success_rate_ejection_threshold:
      c.outlier && c.outlier.successRateEjectionThreshold > 0
        ? { value: c.outlier.successRateEjectionThreshold }
        : undefined,
    host_statuses: c.hosts.map(hostStatus),
    local_origin_success_rate_ejection_threshold:
      c.outlier && c.outlier.localOriginSuccessRateEjectionThreshold > 0
        ? { value: c.outlier.localOriginSuccessRateEjectionThreshold }
        : undefined,
    circuit_breakers: {
      thresholds: c.thresholds.map((t) => ({
        priority: t.priority === 'DEFAULT' ? undefined : t.priority,
        max_connections: t.maxConnections,
        max_pending_requests: t.maxPendingRequests,
        max_requests: t.maxRequests,
        max_retries: t.maxRetries,
      })),
    },
  }));
  return { cluster_statuses: statuses };
}
