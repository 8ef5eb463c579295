/**
 * Host health: active health checking and outlier detection, the edges that turn what they
 * see into `health/*` events. See docs/health.md.
 */
import { type HealthEdges, IMMEDIATE_HEALTH_CHECK_FAIL } from '../../upstream/outcomes.js';
import { type ActiveHealthChecking, startActiveHealthChecking } from './active.js';
import type { HealthDeps } from './check-context.js';
import { type OutlierDetection, startOutlierDetection } from './outlier.js';

export type { HealthEdges } from '../../upstream/outcomes.js';
export type { HealthDeps } from './check-context.js';

/**
 * Starts active health checking and outlier detection. Run once per server, in the process
 * that owns the store (never in a data-plane worker): workers see health through the events.
 */
export function startHealthEdges(deps: HealthDeps): HealthEdges {
  const active: ActiveHealthChecking = startActiveHealthChecking(deps);
  const outlier: OutlierDetection = startOutlierDetection(deps);
  const put = (cluster: string, address: string, status: number) => {
    active.noteTraffic(cluster);
    if (status === IMMEDIATE_HEALTH_CHECK_FAIL) active.failPassively(cluster, address);
    else outlier.put(cluster, address, status);
  };
  return {
    firstRound: active.firstRound,
    onOutcome: (cluster, address, status) => put(cluster.name, address, status),
    onOutcomes(batch) {
      for (const [cluster, address, status] of batch) put(cluster, address, status);
    },
    figures: {
      outlier: (cluster) => outlier.figures(cluster),
      hostSuccessRate: (cluster, address) => outlier.hostSuccessRate(cluster, address),
      lastHealthCheck: (cluster, address) => active.lastCheck(cluster, address),
    },
    close() {
      active.close();
      outlier.close();
    },
  };
}
