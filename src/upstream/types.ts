import type { RawCluster } from '../../events/index.js';
import type { ClusterSettings } from '../../reducers/settings/cluster.js';
import type { HostState } from '../../reducers/state.js';
import type { HostCounters as HostStats } from '../../views/clusters/figures.js';
import type { Secrets } from '../config/secrets.js';
import type { Scope } from '../stats/store.js';
import type { MetadataCriteria } from './lb/criteria.js';

/** Per-host figures `/clusters` shows; plain numbers the data plane bumps in place. */
export type { HostCounters as HostStats } from '../../views/clusters/figures.js';

/**
 * A member as the data plane holds it. The object lives as long as the member does (same
 * `address`), so its pool and counters survive health and weight updates; `state` is
 * replaced with the newest snapshot record.
 */
export interface UpstreamHost {
  readonly address: string;
  readonly ip: string;
  readonly port: number;
  state: HostState;
  readonly stats: HostStats;
  /** The data plane's connection pool for this host, created on first use. */
  pool: unknown;
  /**
   * What a hashing balancer derived from `address` (its ring entries' hashes, its Maglev
   * permutation), kept for the member's life so that a rebuild hashes only the members it
   * gains; null until one does.
   */
  hashes: HostHashes | null;
}

/** Numbers derived from a member's address, under the key of what derived them (hash function, table size). */
export interface HostHashes {
  readonly key: string;
  readonly values: number[];
}

/** What a balancer may use to choose: a request hash for hashing balancers, and the retry attempt. */
export interface LbContext {
  /** 64-bit hash of the request (hash_policy), or null when the route computes none. */
  hash: bigint | null;
  /** 0 for the first try, then 1, 2 ... on retries. */
  attempt: number;
  /** The route's `metadata_match` for subset balancing; absent or null when it has none. */
  criteria?: MetadataCriteria | null;
  /** For an ORIGINAL_DST cluster: the destination `ip:port` the request names, or null. */
  originalDst?: string | null;
}

export interface LoadBalancer {
  /** A host for this request, or null when none is available. */
  choose(context: LbContext): UpstreamHost | null;
  /**
   * Balancers that create hosts on demand (ORIGINAL_DST): drops and returns the hosts no
   * request used since the previous call (all of them with `all`), for the cluster manager's
   * `cleanup_interval` timer to close their pools.
   */
  sweep?(all?: boolean): UpstreamHost[];
}

/**
 * A cluster ready for traffic: rebuilt (a new object) whenever its snapshot entry changes,
 * except for its `traffic`, which the cluster manager hands from each runtime to the next.
 */
export interface ClusterRuntime<Traffic = unknown> {
  readonly name: string;
  readonly settings: ClusterSettings;
  readonly hosts: readonly UpstreamHost[];
  readonly lb: LoadBalancer;
  /** `cluster.<stat name>.` */
  readonly scope: Scope;
  /** The config it was built from, for what the data plane compiles from it (TLS). */
  readonly config?: RawCluster;
  /**
   * The secrets the TLS context of `config` may name, as they are now (static and
   * discovered): a rotated secret takes effect at the next connection.
   */
  readonly secrets?: () => Secrets;
  /**
   * Where the data plane reports the outcome of each request attempt to a member (an HTTP
   * status, 0 without a response) and of each TCP proxy connect: set only for clusters with
   * outlier detection or health checks, whose edges follow the outcomes.
   */
  readonly outcome?: (host: UpstreamHost, status: number) => void;
  /**
   * What the data plane keeps per cluster across rebuilds (its traffic accounting and
   * connector), made by the `TrafficFactory` the data plane gives the cluster manager, so
   * this layer never names the data plane's types.
   */
  readonly traffic: Traffic;
}

/** A runtime before its traffic record: what a `TrafficFactory` reads. */
export type ClusterBuild = Omit<ClusterRuntime, 'traffic'>;

/**
 * Makes the traffic record of a cluster's first runtime, or carries `previous` (the record of
 * the runtime it replaces) over to a rebuilt one.
 */
export type TrafficFactory<Traffic> = (cluster: ClusterBuild, previous: Traffic | undefined) => Traffic;
