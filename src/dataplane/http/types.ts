import type { ServerContext } from '../../context-core.js';
import type { WorkerSlice } from '../listeners/limits.js';
import type { ClusterLookup } from '../pool/cluster-traffic.js';

/** Kept here too for the data plane's existing users; filters import it from the pool (no circle through the context). */
export type { ClusterLookup };

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
  /** Which data-plane thread builds it, for the filters' shares of process-wide budgets; absent: the only one. */
  slice?: WorkerSlice;
  /** The listener's `bypass_overload_manager`: its requests meet no overload action. */
  bypassOverload?: boolean;
}
