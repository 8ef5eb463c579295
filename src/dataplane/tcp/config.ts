import type { Json, JsonObject } from '../../../events/config.js';
import { durationMs, numberOr, objectOf, stringOr } from '../../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable } from '../../bootstrap/honoured.js';
import type { Report } from '../../bootstrap/report.js';
import { compileCriteria, type MetadataCriteria } from '../../upstream/lb/criteria.js';
import { type AccessLogSpec, compileAccessLogs } from '../access-log/config.js';

/** One target of `weighted_clusters`. */
export interface WeightedCluster {
  name: string;
  weight: number;
  /** The proxy's `metadata_match`, with the entry's merged over it, for subset balancing. */
  criteria: MetadataCriteria | null;
}

/** A `TcpProxy` filter config with the reference's defaults applied. */
export interface TcpProxySettings {
  statPrefix: string;
  /** One entry for `cluster`, several for `weighted_clusters`. */
  clusters: WeightedCluster[];
  /** The proxy's own `metadata_match`, for a cluster a filter named (cluster-override.ts). */
  criteria: MetadataCriteria | null;
  totalWeight: number;
  /** 0 disables; the reference's default is one hour. */
  idleTimeoutMs: number;
  maxConnectAttempts: number;
  /** `access_log`: one line per connection, written when it closes. */
  accessLogs: AccessLogSpec[];
}

const ONE_HOUR_MS = 3_600_000;

const TCP_PROXY_FIELDS: FieldTable = {
  ...acting(
    'stat_prefix',
    'cluster',
    'weighted_clusters',
    'idle_timeout',
    'max_connect_attempts',
    'access_log',
  ),
  // Subset balancing (src/upstream/lb/subset.ts), as a route's.
  metadata_match: 'act',
};

/** The field tables of this compile step, by the message name its findings use (docs/bootstrap.md lists them). */
export const FIELD_TABLES = { TcpProxy: TCP_PROXY_FIELDS };

/**
 * Compiles a `tcp_proxy` filter's typed_config (canonical form); `path` names it in
 * findings. The value is served only when the report has no errors.
 */
export function compileTcpProxy(config: JsonObject, path: string, report: Report): TcpProxySettings {
  checkFields(config, path, report, TCP_PROXY_FIELDS, 'TcpProxy');
  const statPrefix = stringOr(config.stat_prefix, '');
  if (!statPrefix) report.error(`${path}.stat_prefix`, 'required field missing', 'missing');
  const clusters = clustersOf(config);
  const totalWeight = clusters.reduce((sum, c) => sum + c.weight, 0);
  if (clusters.length === 0)
    report.error(path, 'needs an upstream: set cluster or weighted_clusters.clusters', 'missing');
  else if (totalWeight <= 0) report.error(`${path}.weighted_clusters`, 'weights must add up to more than 0');
  return {
    statPrefix,
    clusters,
    criteria: compileCriteria(config.metadata_match === undefined ? null : objectOf(config.metadata_match)),
    totalWeight,
    idleTimeoutMs: Math.max(0, durationMs(config.idle_timeout, ONE_HOUR_MS)),
    maxConnectAttempts: Math.max(1, numberOr(config.max_connect_attempts, 1)),
    accessLogs: compileAccessLogs(config.access_log, `${path}.access_log`, report),
  };
}

function clustersOf(config: JsonObject): WeightedCluster[] {
  const match = config.metadata_match === undefined ? null : objectOf(config.metadata_match);
  const single = stringOr(config.cluster, '');
  if (single) return [{ name: single, weight: 1, criteria: compileCriteria(match) }];
  const list: Json[] = (objectOf(config.weighted_clusters).clusters as Json[] | undefined) ?? [];
  return (Array.isArray(list) ? list : [])
    .map((c) => objectOf(c))
    .filter((c) => stringOr(c.name, '') !== '')
    .map((c) => ({
      name: c.name as string,
      weight: numberOr(c.weight, 0),
      criteria: compileCriteria(match, c.metadata_match === undefined ? null : objectOf(c.metadata_match)),
    }));
}

/** The target for one connection: `random` in [0, 1) picks by weight. */
export function pickCluster(settings: TcpProxySettings, random: number): WeightedCluster {
  const clusters = settings.clusters;
  if (clusters.length === 1) return clusters[0] as WeightedCluster;
  let point = random * settings.totalWeight;
  for (const c of clusters) {
    if (point < c.weight) return c;
    point -= c.weight;
  }
  return clusters[clusters.length - 1] as WeightedCluster;
}
