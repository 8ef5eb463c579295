import type { Locality } from '../../../events/config.js';
import type { ClusterSettings } from '../../../reducers/settings/cluster.js';
import type { HostState } from '../../../reducers/state.js';
import type { Scope } from '../../stats/store.js';
import type { Random } from '../random.js';
import type { UpstreamHost } from '../types.js';

/**
 * What a cluster remembers across balancer rebuilds, as the reference's balancer object
 * (which lives as long as its cluster) does: the seed drawn once, and round-robin positions
 * per host source, so an update does not restart the rotation.
 */
export interface LbMemory {
  readonly seed: number;
  readonly rrIndexes: number[];
  /** With `lb_subset_config`: each subset's memory by its key, so updates keep its rotation and count creations and removals. */
  subsets?: Map<string, LbMemory>;
  /** With ORIGINAL_DST: the destinations created on demand, and whether one was used since the last sweep. */
  destinations?: Map<string, { host: UpstreamHost; used: boolean }>;
}

/** Everything a balancer is built from; balancers are rebuilt whenever the cluster's snapshot changes. */
export interface BalancerInput {
  readonly hosts: readonly UpstreamHost[];
  readonly settings: ClusterSettings;
  /** Effective healthy panic threshold in percent, 0..100. */
  readonly panicThreshold: number;
  readonly random: Random;
  readonly memory: LbMemory;
  /** `cluster.<stat name>.` */
  readonly scope: Scope;
  /**
   * The same prefix where facts about the cluster's config count once however many
   * processes build its balancer (`lb_subsets_created`); `scope` when absent.
   */
  readonly controlScope?: Scope;
  /**
   * Zone-aware routing's view of this proxy's own cluster (`local_cluster_name`): its members
   * and the proxy's locality (`node.locality`, the zone from `--service-zone`). Absent or
   * null without a local cluster.
   */
  readonly local?: LocalCluster | null;
  /** A subset's factor per locality (`scale_locality_weight`): its hosts there over the cluster's. */
  readonly localityScale?: ReadonlyMap<string, number>;
}

export interface LocalCluster {
  readonly hosts: readonly HostState[];
  readonly locality: Locality;
}
