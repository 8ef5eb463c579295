import type { ServerContext } from '../../context.js';
import type { ClusterRuntime } from '../../upstream/types.js';
import type { ClusterTraffic } from '../pool/cluster-traffic.js';

/**
 * Finds the live runtime of a cluster by name, carrying its traffic record; provided by the
 * upstream cluster manager built with the `clusterTraffic` factory.
 */
export interface ClusterLookup {
  get(name: string): ClusterRuntime<ClusterTraffic> | undefined;
}

/** What the listener side hands to every HTTP connection manager it builds. */
export interface HttpConnectionManagerDeps {
  ctx: ServerContext;
  clusters: ClusterLookup;
  /** Name of the listener owning the filter chain, for logs and stats. */
  listenerName: string;
  /**
   * The listener's `per_connection_buffer_limit_bytes`: what the HTTP filters of one request
   * may hold in each direction. Absent: the reference's default, 1 MiB.
   */
  bufferLimitBytes?: number;
}
