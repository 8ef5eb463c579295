import type { ClusterEntry } from '../../../reducers/index.js';
import type { OutlierFigures } from '../../../views/clusters/figures.js';
import { compiledCluster } from '../../config/cluster.js';
import { compiledOutlierEventLog } from '../../config/health.js';
import { followClusters } from '../../control/follow-clusters.js';
import type { HealthDeps } from './check-context.js';
import { ClusterDetector } from './cluster-detector.js';
import { JsonLinesLog } from './event-log.js';

/** The outlier detectors of every cluster with `outlier_detection`. */
export interface OutlierDetection {
  /** One outcome of a request (HTTP status, 0 without a response) to a member of `cluster`. */
  put(cluster: string, address: string, status: number): void;
  figures(cluster: string): OutlierFigures | undefined;
  hostSuccessRate(
    cluster: string,
    address: string,
  ): { successRate: number; localOriginSuccessRate: number } | undefined;
  close(): void;
}

/**
 * Starts outlier detection (an edge of the process that owns the store; workers send their
 * outcomes to it). Ejections and returns are `health/outlier-changed` events.
 */
export function startOutlierDetection(
  deps: HealthDeps,
  now: () => number = () => deps.store.scheduler.now(),
): OutlierDetection {
  const logPath = compiledOutlierEventLog(deps.store.state.bootstrap?.config);
  const eventLog = logPath
    ? new JsonLinesLog(logPath, (message) => deps.log?.get('upstream').error(`outlier ${message}`))
    : null;

  function follow(name: string, entry: ClusterEntry, detector: ClusterDetector | undefined) {
    const settings = compiledCluster(entry.config).outlier;
    if (detector && detector.config !== entry.config) {
      detector.close(settings === null);
      detector = undefined;
    }
    if (!settings) return undefined;
    detector ??= new ClusterDetector(name, entry.config, settings, deps, now, eventLog);
    detector.syncHosts(entry.hosts);
    return detector;
  }

  const detectors = followClusters<ClusterDetector | undefined>(deps.store, {
    added: (name, entry) => follow(name, entry, undefined),
    changed: (name, entry, detector) => follow(name, entry, detector),
    removed: (_name, detector) => detector?.close(false),
    // One bad snapshot must not end outlier detection: the next one is followed again.
    failed: (err) =>
      deps.log?.get('upstream').error({ err }, 'outlier detection: a snapshot could not be followed'),
  });
  return {
    put: (cluster, address, status) => detectors.get(cluster)?.put(address, status),
    figures: (cluster) => detectors.get(cluster)?.figures,
    hostSuccessRate(cluster, address) {
      const m = detectors.get(cluster)?.monitors.get(address);
      return m ? { successRate: m.successRate, localOriginSuccessRate: m.localOriginSuccessRate } : undefined;
    },
    close() {
      detectors.close();
      for (const detector of detectors.values()) detector?.close(false);
      eventLog?.close();
    },
  };
}
