import { destinationState, parseDestination } from '../../reducers/hosts.js';
import { clusterSettings, type Thresholds } from '../../reducers/settings/cluster.js';
import type { ClusterEntry, HostState, State } from '../../reducers/state.js';
import {
  type ClustersFigures,
  type HostCounters,
  type LastHealthCheck,
  type OutlierFigures,
  zeroHostCounters,
} from './figures.js';

const ZERO: HostCounters = Object.freeze(zeroHostCounters());

const NOT_COMPUTED: OutlierFigures = {
  successRateAverage: -1,
  successRateEjectionThreshold: -1,
  localOriginSuccessRateAverage: -1,
  localOriginSuccessRateEjectionThreshold: -1,
};

/** Everything `/clusters` prints about one host. */
export interface HostView {
  host: HostState;
  counters: HostCounters;
  healthFlags: string[];
  canary: boolean;
  successRate: number;
  localOriginSuccessRate: number;
  /** The last active check of any of the host's checkers; null when none ran (or none is configured). */
  lastCheck: LastHealthCheck | null;
}

/** Everything `/clusters` prints about one cluster. */
export interface ClusterView {
  entry: ClusterEntry;
  /** Present when the cluster has an outlier detector. */
  outlier: OutlierFigures | null;
  thresholds: Thresholds[];
  hosts: HostView[];
}

/** Health flags in the reference's order; empty means healthy. */
export function healthFlags(host: HostState): string[] {
  const flags: string[] = [];
  if (host.failedActiveHc) flags.push('/failed_active_hc');
  if (host.failedOutlierCheck) flags.push('/failed_outlier_check');
  if (host.edsHealth === 'UNHEALTHY' || host.edsHealth === 'DRAINING' || host.edsHealth === 'TIMEOUT')
    flags.push('/failed_eds_health');
  if (host.degradedActiveHc) flags.push('/degraded_active_hc');
  if (host.edsHealth === 'DEGRADED') flags.push('/degraded_eds_health');
  if (host.pendingDynamicRemoval) flags.push('/pending_dynamic_removal');
  if (host.pendingActiveHc) flags.push('/pending_active_hc');
  return flags;
}

/** `canary: true` in the endpoint's `proxy.lb` (or reference-spelled `envoy.lb`) metadata. */
function isCanary(host: HostState): boolean {
  for (const ns of ['proxy.lb', 'envoy.lb']) {
    const md = host.metadata[ns];
    if (md && typeof md === 'object' && !Array.isArray(md) && md.canary === true) return true;
  }
  return false;
}

/** The hosts the data plane created for `entry` (ORIGINAL_DST), as members of weight 1 in no locality. */
function created(entry: ClusterEntry, figures: ClustersFigures): HostState[] {
  const known = new Set(entry.hosts.map((h) => h.address));
  return (figures.createdHosts?.(entry.name) ?? []).flatMap((address) => {
    if (known.has(address)) return [];
    const parsed = parseDestination(address);
    return parsed ? [destinationState(parsed)] : [];
  });
}

/** Clusters sorted by name, each with its live figures (zeroes and `-1` when none are reported). */
export function selectClusters(state: State, figures: ClustersFigures): ClusterView[] {
  return Object.values(state.clusters)
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((entry) => {
      const settings = clusterSettings(entry.config);
      const outlier = settings.hasOutlierDetection ? (figures.outlier?.(entry.name) ?? NOT_COMPUTED) : null;
      return {
        entry,
        outlier,
        thresholds: [settings.thresholds.DEFAULT, settings.thresholds.HIGH],
        hosts: [...entry.hosts, ...created(entry, figures)].map((host) => {
          const rates = figures.hostSuccessRate?.(entry.name, host.address);
          return {
            host,
            counters: figures.hostStats(entry.name, host.address) ?? ZERO,
            healthFlags: healthFlags(host),
            canary: isCanary(host),
            successRate: rates?.successRate ?? -1,
            localOriginSuccessRate: rates?.localOriginSuccessRate ?? -1,
            lastCheck: figures.lastHealthCheck?.(entry.name, host.address) ?? null,
          };
        }),
      };
    });
}
