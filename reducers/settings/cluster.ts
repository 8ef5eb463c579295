import type { Json, RawCluster } from '../../events/index.js';
import { durationMs, numberOr, objectOf, percentOr, stringOr } from './values.js';

export type Priority = 'DEFAULT' | 'HIGH';

export interface Thresholds {
  priority: Priority;
  maxConnections: number;
  maxPendingRequests: number;
  maxRequests: number;
  maxRetries: number;
}

export type SubsetFallback = 'NO_FALLBACK' | 'ANY_ENDPOINT' | 'DEFAULT_SUBSET';

/** `lb_subset_config` with its defaults; selector keys sorted, as subsets are looked up by them. */
export interface SubsetSettings {
  fallbackPolicy: SubsetFallback;
  defaultSubset: Record<string, Json>;
  selectors: Array<{ keys: string[]; fallbackPolicy: SubsetFallback | null }>;
  listAsAny: boolean;
  panicModeAny: boolean;
  /** With `locality_weighted_lb_config`: whether subsets pick localities by weight too. */
  localityWeightAware: boolean;
  /** With `locality_weight_aware`: scale each locality's weight by the subset's share of its hosts. */
  scaleLocalityWeight: boolean;
}

const FALLBACKS = new Set<string>(['NO_FALLBACK', 'ANY_ENDPOINT', 'DEFAULT_SUBSET']);
const fallbackOf = (value: Json | undefined): SubsetFallback | null =>
  typeof value === 'string' && FALLBACKS.has(value) ? (value as SubsetFallback) : null;

function subsetOf(cluster: RawCluster): SubsetSettings | null {
  if (cluster.lb_subset_config === undefined) return null;
  const raw = objectOf(cluster.lb_subset_config);
  const selectors = (Array.isArray(raw.subset_selectors) ? raw.subset_selectors : []).map((s) => {
    const o = objectOf(s);
    const keys = (Array.isArray(o.keys) ? o.keys : []).map(String);
    return { keys: [...new Set(keys)].sort(), fallbackPolicy: fallbackOf(o.fallback_policy) };
  });
  return {
    fallbackPolicy: fallbackOf(raw.fallback_policy) ?? 'NO_FALLBACK',
    defaultSubset: objectOf(raw.default_subset),
    selectors: selectors.filter((s) => s.keys.length > 0),
    listAsAny: raw.list_as_any === true,
    panicModeAny: raw.panic_mode_any === true,
    localityWeightAware: raw.locality_weight_aware === true,
    scaleLocalityWeight: raw.scale_locality_weight === true,
  };
}

/** A cluster's config with every default of the spec filled in, in the units the data plane uses. */
export interface ClusterSettings {
  name: string;
  statName: string;
  type: string;
  lbPolicy: string;
  connectTimeoutMs: number;
  perConnectionBufferLimitBytes: number;
  maxRequestsPerConnection: number;
  http2: boolean;
  protocolSelection: string;
  dnsRefreshRateMs: number;
  respectDnsTtl: boolean;
  dnsLookupFamily: string;
  dnsResolvers: Array<{ address: string; port: number }>;
  cleanupIntervalMs: number;
  thresholds: Record<Priority, Thresholds>;
  ringHash: { minimumRingSize: number; maximumRingSize: number; hashFunction: string };
  leastRequestChoiceCount: number;
  healthyPanicThreshold: number;
  updateMergeWindowMs: number;
  zoneAware: { routingEnabled: number; minClusterSize: number };
  /** `locality_weighted_lb_config`: localities are picked by their weight (zone-aware routing is then off). */
  localityWeighted: boolean;
  ignoreNewHostsUntilFirstHc: boolean;
  closeConnectionsOnHostHealthFailure: boolean;
  hasOutlierDetection: boolean;
  hasHealthChecks: boolean;
  /** `lb_subset_config`; null when the cluster balances over all its hosts. */
  subset: SubsetSettings | null;
  /** ORIGINAL_DST `original_dst_lb_config.use_http_header`: the request header names the destination. */
  useOriginalDstHeader: boolean;
}

const THRESHOLD_DEFAULTS = {
  maxConnections: 1024,
  maxPendingRequests: 1024,
  maxRequests: 1024,
  maxRetries: 3,
};

function thresholdsOf(cluster: RawCluster): Record<Priority, Thresholds> {
  const out: Record<Priority, Thresholds> = {
    DEFAULT: { priority: 'DEFAULT', ...THRESHOLD_DEFAULTS },
    HIGH: { priority: 'HIGH', ...THRESHOLD_DEFAULTS },
  };
  const list = objectOf(cluster.circuit_breakers).thresholds;
  for (const t of Array.isArray(list) ? list : []) {
    const o = objectOf(t);
    const priority: Priority = o.priority === 'HIGH' ? 'HIGH' : 'DEFAULT';
    out[priority] = {
      priority,
      maxConnections: numberOr(o.max_connections, THRESHOLD_DEFAULTS.maxConnections),
      maxPendingRequests: numberOr(o.max_pending_requests, THRESHOLD_DEFAULTS.maxPendingRequests),
      maxRequests: numberOr(o.max_requests, THRESHOLD_DEFAULTS.maxRequests),
      maxRetries: numberOr(o.max_retries, THRESHOLD_DEFAULTS.maxRetries),
    };
  }
  return out;
}

function resolversOf(value: Json | undefined): Array<{ address: string; port: number }> {
  return (Array.isArray(value) ? value : []).map((a) => {
    const socket = objectOf(objectOf(a).socket_address);
    return { address: stringOr(socket.address, ''), port: numberOr(socket.port_value, 53) };
  });
}

/** Statistics name of a cluster: `alt_stat_name` or `name`, with each `:` as `_`. */
export function clusterStatName(cluster: RawCluster): string {
  // A config without a name is refused by its compile step, which still reads its settings.
  return stringOr(cluster.alt_stat_name, stringOr(cluster.name, '')).replaceAll(':', '_');
}

const cache = new WeakMap<RawCluster, ClusterSettings>();

/**
 * Defaults of the spec applied to a cluster's config. Pure, and memoised by identity: a
 * snapshot's cluster config is frozen, so the same object always has the same settings.
 */
export function clusterSettings(cluster: RawCluster): ClusterSettings {
  const hit = cache.get(cluster);
  if (hit) return hit;
  const common = objectOf(cluster.common_lb_config);
  const ring = objectOf(cluster.ring_hash_lb_config);
  const zone = objectOf(common.zone_aware_lb_config);
  const settings: ClusterSettings = {
    name: cluster.name,
    statName: clusterStatName(cluster),
    type: stringOr(cluster.type, cluster.cluster_type ? 'CUSTOM' : 'STATIC'),
    lbPolicy: stringOr(cluster.lb_policy, 'ROUND_ROBIN'),
    connectTimeoutMs: durationMs(cluster.connect_timeout, 5000),
    perConnectionBufferLimitBytes: numberOr(cluster.per_connection_buffer_limit_bytes, 1024 * 1024),
    maxRequestsPerConnection: numberOr(cluster.max_requests_per_connection, 0),
    http2: cluster.http2_protocol_options !== undefined,
    protocolSelection: stringOr(cluster.protocol_selection, 'USE_CONFIGURED_PROTOCOL'),
    dnsRefreshRateMs: durationMs(cluster.dns_refresh_rate, 5000),
    respectDnsTtl: cluster.respect_dns_ttl === true,
    dnsLookupFamily: stringOr(cluster.dns_lookup_family, 'AUTO'),
    dnsResolvers: resolversOf(cluster.dns_resolvers),
    cleanupIntervalMs: durationMs(cluster.cleanup_interval, 5000),
    thresholds: thresholdsOf(cluster),
    ringHash: {
      minimumRingSize: numberOr(ring.minimum_ring_size, 1024),
      maximumRingSize: numberOr(ring.maximum_ring_size, 8 * 1024 * 1024),
      hashFunction: stringOr(ring.hash_function, 'XX_HASH'),
    },
    leastRequestChoiceCount: numberOr(objectOf(cluster.least_request_lb_config).choice_count, 2),
    // A Percent of 0 is `{}` in canonical JSON: present means its value, absent means 50.
    healthyPanicThreshold:
      common.healthy_panic_threshold === undefined
        ? 50
        : Math.trunc(percentOr(common.healthy_panic_threshold, 0)),
    updateMergeWindowMs: durationMs(common.update_merge_window, 1000),
    zoneAware: {
      routingEnabled: percentOr(zone.routing_enabled, 100),
      minClusterSize: numberOr(zone.min_cluster_size, 6),
    },
    localityWeighted: common.locality_weighted_lb_config !== undefined,
    ignoreNewHostsUntilFirstHc: common.ignore_new_hosts_until_first_hc === true,
    closeConnectionsOnHostHealthFailure: cluster.close_connections_on_host_health_failure === true,
    hasOutlierDetection: cluster.outlier_detection !== undefined,
    hasHealthChecks: Array.isArray(cluster.health_checks) && cluster.health_checks.length > 0,
    subset: subsetOf(cluster),
    useOriginalDstHeader: objectOf(cluster.original_dst_lb_config).use_http_header === true,
  };
  cache.set(cluster, settings);
  return settings;
}
