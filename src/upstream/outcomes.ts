import type { ClustersFigures } from '../../views/clusters/figures.js';

/**
 * The outcome of an answer carrying `x-proxy-immediate-health-check-fail` (an upstream proxy
 * whose health check filter fails): its host fails its active checks at once (`passive_failure`).
 */
export const IMMEDIATE_HEALTH_CHECK_FAIL = -1;

const IMMEDIATE_FAIL_HEADER = 'x-proxy-immediate-health-check-fail';

/** True when a response head (flat name, value list, names in any case) asks for an immediate health check failure. */
export function failsHealthChecksAtOnce(headers: readonly string[]): boolean {
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    if (name.length === IMMEDIATE_FAIL_HEADER.length && name.toLowerCase() === IMMEDIATE_FAIL_HEADER)
      return true;
  }
  return false;
}

/** Outcomes a worker relays: `[cluster, address, status]`, status 0 when no response came. */
export type OutcomeBatch = Array<[string, string, number]>;

/** What the relay needs to know of a cluster: whether its every outcome matters. */
interface OutcomeCluster {
  readonly name: string;
  readonly settings: { readonly hasOutlierDetection: boolean };
}

/**
 * The outcome sink of a data-plane worker: outcomes gathered within one turn of the event
 * loop go to the primary in one message. A cluster without outlier detection only needs its
 * first outcome (it ends the checks' no-traffic interval) and any immediate health check
 * failure, so other ones stay here.
 */
export function relayOutcomes(
  send: (batch: OutcomeBatch) => void,
): (cluster: OutcomeCluster, address: string, status: number) => void {
  let batch: OutcomeBatch = [];
  const noted = new Set<string>();
  const flush = () => {
    const out = batch;
    batch = [];
    send(out);
  };
  return (cluster, address, status) => {
    if (!cluster.settings.hasOutlierDetection && status !== IMMEDIATE_HEALTH_CHECK_FAIL) {
      if (noted.has(cluster.name)) return;
      noted.add(cluster.name);
    }
    if (batch.length === 0) setImmediate(flush);
    batch.push([cluster.name, address, status]);
  };
}

/**
 * The health edges of the primary process (`src/edges/health/`), as the data plane sees them:
 * where request outcomes go, and the figures `/clusters` shows.
 */
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
