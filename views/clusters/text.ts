import type { State } from '../../reducers/state.js';
import { CHUNK_CHARS, type StreamedResult, TEXT } from '../result.js';
import { type ClustersFigures, HOST_STAT_NAMES } from './figures.js';
import { type ClusterView, selectClusters } from './select.js';

const PRIORITY_PREFIX = { DEFAULT: 'default_priority', HIGH: 'high_priority' } as const;

/**
 * `/clusters` as text: `version_info::<cds version or static>`, then per cluster its
 * outlier figures (with a detector), circuit breakers, `added_via_api` and every host field;
 * streamed cluster by cluster.
 */
export function renderClustersText(state: State, figures: ClustersFigures): StreamedResult {
  return { status: 200, contentType: TEXT, body: clustersText(state, selectClusters(state, figures)) };
}

function* clustersText(state: State, clusters: ClusterView[]): Generator<string> {
  let buf = `version_info::${state.clusterManager.versionInfo || 'static'}\n`;
  for (const c of clusters) {
    const lines: string[] = [];
    const name = c.entry.name;
    if (c.outlier) {
      lines.push(
        `${name}::outlier::success_rate_average::${c.outlier.successRateAverage}`,
        `${name}::outlier::success_rate_ejection_threshold::${c.outlier.successRateEjectionThreshold}`,
        `${name}::outlier::local_origin_success_rate_average::${c.outlier.localOriginSuccessRateAverage}`,
        `${name}::outlier::local_origin_success_rate_ejection_threshold::${c.outlier.localOriginSuccessRateEjectionThreshold}`,
      );
    }
    for (const t of c.thresholds) {
      const p = `${name}::${PRIORITY_PREFIX[t.priority]}`;
      lines.push(
        `${p}::max_connections::${t.maxConnections}`,
        `${p}::max_pending_requests::${t.maxPendingRequests}`,
        `${p}::max_requests::${t.maxRequests}`,
        `${p}::max_retries::${t.maxRetries}`,
      );
    }
    lines.push(`${name}::added_via_api::${c.entry.addedViaApi}`);
    for (const h of c.hosts) {
      const p = `${name}::${h.host.address}`;
      for (const stat of HOST_STAT_NAMES) lines.push(`${p}::${stat}::${h.counters[stat]}`);
      lines.push(
        `${p}::hostname::${h.host.hostname}`,
        `${p}::health_flags::${h.healthFlags.length > 0 ? h.healthFlags.join('') : 'healthy'}`,
        `${p}::weight::${h.host.weight}`,
        `${p}::region::${h.host.locality.region}`,
        `${p}::zone::${h.host.locality.zone}`,
        `${p}::sub_zone::${h.host.locality.sub_zone}`,
        `${p}::canary::${h.canary}`,
        `${p}::priority::${h.host.priority}`,
        `${p}::success_rate::${h.successRate}`,
        `${p}::local_origin_success_rate::${h.localOriginSuccessRate}`,
      );
    }
    buf += `${lines.join('\n')}\n`;
    if (buf.length >= CHUNK_CHARS) {
      yield buf;
      buf = '';
    }
  }
  yield buf;
}
