/**
 * Host health: active health checking and outlier detection, the edges that turn what they
 * see into `health/*` events. See docs/health.md.
 */
import type { ClustersFigures } from '../../../views/clusters/figures.js';
import { IMMEDIATE_HEALTH_CHECK_FAIL, type OutcomeBatch } from '../../upstream/outcomes.js';
import { type ActiveHealthChecking, startActiveHealthChecking } from './active.js';
import type { HealthDeps } from './check-context.js';
import { type OutlierDetection, startOutlierDetection } from './outlier.js';

export type { HealthDeps } from './check-context.js';

/** The health edges of the primary process. */
export interface HealthEdges {
  /** Resolves once every member present at start had its first active check. */
  readonly firstRound: Promise<void>;
  /**
   * An outcome of a request from the data plane (this process's or a worker's): an HTTP
   * status, or 0 when no response came. It feeds the outlier detector and moves the active
   * checks of the cluster off `no_traffic_interval`.
   */
  onOutcome(cluster: { readonly name: string }, address: string, status: number): void;
  /** Outcomes a data-plane worker relayed (see `relayOutcomes`). */
  onOutcomes(batch: OutcomeBatch): void;
  /** The outlier and last-check figures `/clusters` shows. */
  figures: Pick<ClustersFigures, 'outlier' | 'hostSuccessRate' | 'lastHealthCheck'>;
  close(): void;
}

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
