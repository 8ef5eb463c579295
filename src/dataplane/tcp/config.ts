import type { Json, JsonObject } from '../../../events/config.js';
import { durationMs, numberOr, objectOf, stringOr } from '../../../reducers/settings/values.js';

/** One target of `weighted_clusters`. */
export interface WeightedCluster {
  name: string;
  weight: number;
}

/** A `TcpProxy` filter config with the reference's defaults applied. */
export interface TcpProxySettings {
  statPrefix: string;
  /** One entry for `cluster`, several for `weighted_clusters`. */
  clusters: WeightedCluster[];
  totalWeight: number;
  /** 0 disables; the reference's default is one hour. */
  idleTimeoutMs: number;
  maxConnectAttempts: number;
}

export type TcpProxyParse = { ok: true; settings: TcpProxySettings } | { ok: false; error: string };

const ONE_HOUR_MS = 3_600_000;

/**
 * Reads a `tcp_proxy` filter's config (the `typed_config` or deprecated `config` body, in the
 * canonical form). `where` names the filter in error messages.
 */
export function parseTcpProxy(config: JsonObject, where: string): TcpProxyParse {
  const statPrefix = stringOr(config.stat_prefix, '');
  if (!statPrefix)
    return { ok: false, error: `${where}.stat_prefix: required, give the tcp.<prefix>. stats a name` };
  const clusters = clustersOf(config);
  if (clusters.length === 0) {
    return {
      ok: false,
      error: `${where}: set cluster or weighted_clusters.clusters to name an upstream cluster`,
    };
  }
  const totalWeight = clusters.reduce((sum, c) => sum + c.weight, 0);
  if (totalWeight <= 0)
    return { ok: false, error: `${where}.weighted_clusters: weights must add up to more than 0` };
  return {
    ok: true,
    settings: {
      statPrefix,
      clusters,
      totalWeight,
      idleTimeoutMs: Math.max(0, durationMs(config.idle_timeout, ONE_HOUR_MS)),
      maxConnectAttempts: Math.max(1, numberOr(config.max_connect_attempts, 1)),
    },
  };
}

function clustersOf(config: JsonObject): WeightedCluster[] {
  const single = stringOr(config.cluster, '');
  if (single) return [{ name: single, weight: 1 }];
  const list: Json[] = (objectOf(config.weighted_clusters).clusters as Json[] | undefined) ?? [];
  return (Array.isArray(list) ? list : [])
    .map((c) => objectOf(c))
    .filter((c) => stringOr(c.name, '') !== '')
    .map((c) => ({ name: c.name as string, weight: numberOr(c.weight, 0) }));
}

/** The cluster for one connection: `random` in [0, 1) picks by weight. */
export function pickCluster(settings: TcpProxySettings, random: number): string {
  const clusters = settings.clusters;
  if (clusters.length === 1) return (clusters[0] as WeightedCluster).name;
  let point = random * settings.totalWeight;
  for (const c of clusters) {
    if (point < c.weight) return c.name;
    point -= c.weight;
  }
  return (clusters[clusters.length - 1] as WeightedCluster).name;
}
