import type { Scope } from '../../../stats/store.js';
import type { ClusterLookup } from '../../pool/cluster-traffic.js';

/**
 * A filter's stats under its request's routed cluster (`cluster.<name>.<prefix>.`), as the
 * reference keeps ext_authz's and ratelimit's: made on first use, once per cluster and
 * connection manager. Null for a request with no routed cluster, which counts nothing.
 */
export function perClusterStats<S>(
  clusters: ClusterLookup,
  prefix: string,
  make: (scope: Scope) => S,
): (cluster: string | null) => S | null {
  const byCluster = new Map<string, S>();
  return (name) => {
    if (name === null) return null;
    let stats = byCluster.get(name);
    if (stats === undefined) {
      const cluster = clusters.get(name);
      if (cluster === undefined) return null;
      stats = make(cluster.scope.scope(prefix));
      byCluster.set(name, stats);
    }
    return stats;
  };
}
