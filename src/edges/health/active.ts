import type { ClusterEntry } from '../../../reducers/index.js';
import type { LastHealthCheck } from '../../../views/clusters/figures.js';
import { compiledCluster } from '../../config/cluster.js';
import { followClusters } from '../../control/follow-clusters.js';
import type { CheckContext, HealthDeps } from './check-context.js';
import { CheckedCluster } from './checked-cluster.js';
import { HealthCheckEventLogs } from './event-log.js';
import { FirstRound } from './first-round.js';

/** The active checkers of every cluster with `health_checks`. */
export interface ActiveHealthChecking {
  /** Resolves once every host present at start had its first check (the reference's cluster warming). */
  readonly firstRound: Promise<void>;
  /** The cluster carried traffic: its checks leave `no_traffic_interval` for good. */
  noteTraffic(cluster: string): void;
  /** An answer from `address` asked to fail it at once (`x-proxy-immediate-health-check-fail`). */
  failPassively(cluster: string, address: string): void;
  /** When `address` was last checked and how that check ended (a live figure of `/clusters`). */
  lastCheck(cluster: string, address: string): LastHealthCheck | undefined;
  close(): void;
}

/** The checks a cluster's entry asks for: none, the same ones (new members), or new ones (new config). */
function follow(
  shared: CheckContext,
  name: string,
  entry: ClusterEntry,
  cluster: CheckedCluster | undefined,
): CheckedCluster | undefined {
  if (cluster && cluster.config !== entry.config) {
    cluster.stop();
    cluster = undefined;
  }
  if (compiledCluster(entry.config).checks.length === 0) return undefined;
  cluster ??= new CheckedCluster(name, entry.config, shared);
  cluster.follow(entry.hosts);
  return cluster;
}

/**
 * Starts the active health checkers (an edge: run once, in the process that owns the store;
 * workers learn every verdict from the events). Follows the snapshots: a cluster whose config
 * changed gets new checkers, members that come and go get and lose theirs. A verdict change
 * of a host (all of its checkers agreeing) is a `health/active-changed` event.
 */
export function startActiveHealthChecking(deps: HealthDeps): ActiveHealthChecking {
  const trafficked = new Set<string>();
  const firstRound = new FirstRound();
  const eventLogs = new HealthCheckEventLogs((message) =>
    deps.log?.get('upstream').error(`health check ${message}`),
  );
  const shared: CheckContext = { deps, firstRound, eventLogs, hadTraffic: (name) => trafficked.has(name) };
  const clusters = followClusters<CheckedCluster | undefined>(deps.store, {
    added: (name, entry) => follow(shared, name, entry, undefined),
    changed: (name, entry, cluster) => follow(shared, name, entry, cluster),
    removed: (_name, cluster) => cluster?.stop(),
    // One bad snapshot must not end health checking: the next one is followed again.
    failed: (err) =>
      deps.log?.get('upstream').error({ err }, 'health checks: a snapshot could not be followed'),
  });
  firstRound.started();
  return {
    firstRound: firstRound.done,
    noteTraffic: (cluster) => trafficked.add(cluster),
    failPassively: (cluster, address) => clusters.get(cluster)?.hosts.get(address)?.failPassively(),
    lastCheck: (cluster, address) => clusters.get(cluster)?.hosts.get(address)?.last,
    close() {
      clusters.close();
      for (const cluster of clusters.values()) cluster?.stop();
      eventLogs.close();
      firstRound.end();
    },
  };
}
