import type { ClusterEntry, State } from '../../reducers/index.js';
import { runtimeValue } from '../../reducers/runtime.js';
import { type ClusterSettings, clusterSettings } from '../../reducers/settings/cluster.js';
import { hostHealth } from '../../reducers/settings/health.js';
import { nodeSettings } from '../../reducers/settings/node.js';
import { stringOr } from '../../reducers/settings/values.js';
import { secretsOf } from '../config/secrets.js';
import { followClusters } from '../control/follow-clusters.js';
import type { Core } from '../core.js';
import { StatsStore } from '../stats/store.js';
import { prepareHashing } from './hash.js';
import { newUpstreamHost } from './host.js';
import { buildLoadBalancer, type LbMemory, NO_HOST } from './lb/index.js';
import type { LocalCluster } from './lb/input.js';
import { defaultRandom, type Random } from './random.js';
import type { ClusterRuntime, HostStats, LoadBalancer, TrafficFactory, UpstreamHost } from './types.js';

/** Runtime key that overrides every cluster's `healthy_panic_threshold` (percent). */
export const PANIC_THRESHOLD_KEY = 'upstream.healthy_panic_threshold';

/** The live clusters of the data plane, kept in step with the store's snapshots. */
export interface ClusterManager<Traffic = undefined> {
  get(name: string): ClusterRuntime<Traffic> | undefined;
  all(): ClusterRuntime<Traffic>[];
  /** The counters of a member (`ip:port`), configured or created by the balancer, for `/clusters`. */
  hostStats(cluster: string, address: string): HostStats | undefined;
  /** Hosts the balancer created on demand (an ORIGINAL_DST cluster's destinations), not in the snapshot. */
  createdHosts(cluster: string): UpstreamHost[];
  /** Stops following snapshots. */
  close(): void;
}

export interface ClusterManagerOptions {
  /** Random source of the balancers (seed it in tests). */
  random?: Random;
  /**
   * Whether to count control-plane facts (clusters added/modified/removed, membership
   * changes) in `ctx.stats` (default true). Workers folding the primary's events pass
   * false, so the admin's sum over processes counts each change once.
   */
  controlStats?: boolean;
  /** Members that left (or whose cluster went, or the manager closed): the data plane closes their pools. */
  onHostsRemoved?: (hosts: UpstreamHost[]) => void;
  /**
   * Request outcomes of the clusters with outlier detection or health checks (through
   * `ClusterRuntime.outcome`): the primary's health edges, or a worker's relay to them.
   */
  onOutcome?: (cluster: { name: string; settings: ClusterSettings }, address: string, status: number) => void;
}

interface Managed<Traffic> {
  entry: ClusterEntry;
  runtime: ClusterRuntime<Traffic>;
  byAddress: Map<string, UpstreamHost>;
  memory: LbMemory;
  /** ORIGINAL_DST: the `cleanup_interval` timer that drops destinations nobody used. */
  sweeper: NodeJS.Timeout | null;
}

/**
 * The proxy's own cluster for zone-aware routing: `cluster_manager.local_cluster_name`'s
 * members and the node's locality, its zone replaced by `--service-zone` when given. The
 * previous object when nothing changed, so an unrelated update rebuilds nothing.
 */
function localClusterOf(state: State, previous: LocalCluster | null): LocalCluster | null {
  const node = nodeSettings(state.bootstrap?.config);
  const entry = node.localClusterName ? state.clusters[node.localClusterName] : undefined;
  if (!entry) return null;
  const locality = node.locality;
  const region = stringOr(locality.region, '');
  const zone = stringOr(state.server.options.service_zone, '') || stringOr(locality.zone, '');
  const subZone = stringOr(locality.sub_zone, '');
  const was = previous?.locality;
  if (
    previous?.hosts === entry.hosts &&
    was?.region === region &&
    was.zone === zone &&
    was.sub_zone === subZone
  )
    return previous;
  return { hosts: entry.hosts, locality: { region, zone, sub_zone: subZone } };
}

/** `upstream.healthy_panic_threshold` when it holds an integer, else undefined. */
function runtimePanicThreshold(state: State): number | undefined {
  const raw = runtimeValue(state, PANIC_THRESHOLD_KEY)?.trim();
  return raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : undefined;
}

/** The members of a cluster entry as upstream hosts, and the figures of its membership gauges. */
interface Members {
  hosts: UpstreamHost[];
  byAddress: Map<string, UpstreamHost>;
  /** Hosts made for members that had none. */
  added: number;
  healthy: number;
  degraded: number;
  excluded: number;
  maxWeight: number;
}

/**
 * Walks a cluster's members: each keeps the `UpstreamHost` it had (`before`, by address) and
 * gets its new state; a new member gets a new host.
 */
function walkMembers(
  members: ClusterEntry['hosts'],
  before: Map<string, UpstreamHost>,
  prior: readonly UpstreamHost[] | undefined,
): Members {
  const hosts = new Array<UpstreamHost>(members.length);
  // Members listed as before, in the same order (a weight or health change): the same
  // hosts and the same map, with no lookup or insert per member.
  let inPlace = prior !== undefined && prior.length === hosts.length;
  let byAddress = inPlace ? before : new Map<string, UpstreamHost>();
  const figures = { added: 0, healthy: 0, degraded: 0, excluded: 0, maxWeight: 0 };
  for (let i = 0; i < hosts.length; i++) {
    const state = members[i]!;
    let host = inPlace ? prior![i] : undefined;
    if (host !== undefined && host.address !== state.address) {
      inPlace = false;
      host = undefined;
      byAddress = new Map();
      for (let j = 0; j < i; j++) byAddress.set(hosts[j]!.address, hosts[j]!);
    }
    if (!inPlace) {
      host = before.get(state.address) ?? byAddress.get(state.address);
      if (host === undefined) {
        host = newUpstreamHost(state);
        figures.added++;
      }
      byAddress.set(state.address, host);
    }
    host!.state = state;
    hosts[i] = host!;
    const health = hostHealth(state);
    if (health === 'healthy') figures.healthy++;
    else if (health === 'degraded') figures.degraded++;
    if (state.weight > figures.maxWeight) figures.maxWeight = state.weight;
    if (state.pendingActiveHc) figures.excluded++;
  }
  return { hosts, byAddress, ...figures };
}

/**
 * Starts the cluster manager: loads the hash functions, then follows `ctx.store.state$`.
 * It only reads snapshots: DNS discovery, which produces the host events it follows, is
 * an edge of its own (started in `src/edges/start.ts`).
 * A cluster gets a new `ClusterRuntime` (with a freshly built balancer) only when its
 * snapshot entry is a new object, or when the runtime panic threshold changed; members
 * keep their `UpstreamHost` object (pool and counters) for as long as their address stays.
 * With a `traffic` factory (the data plane's), each runtime carries the cluster's traffic
 * record, made with its first runtime and handed to every rebuilt one; without, `undefined`.
 */
export function createClusterManager(
  ctx: Pick<Core, 'store' | 'stats' | 'log'>,
  options?: ClusterManagerOptions,
): Promise<ClusterManager<undefined>>;
export function createClusterManager<Traffic>(
  ctx: Pick<Core, 'store' | 'stats' | 'log'>,
  options: ClusterManagerOptions & { traffic: TrafficFactory<Traffic> },
): Promise<ClusterManager<Traffic>>;
export async function createClusterManager<Traffic>(
  ctx: Pick<Core, 'store' | 'stats' | 'log'>,
  options: ClusterManagerOptions & { traffic?: TrafficFactory<Traffic> } = {},
): Promise<ClusterManager<Traffic | undefined>> {
  await prepareHashing();
  const random = options.random ?? defaultRandom;
  const log = ctx.log.get('upstream');
  // Traffic stats always go to ctx.stats; membership and cluster churn counters only when asked.
  const control = options.controlStats === false ? new StatsStore() : ctx.stats;
  const managerScope = control.scope('cluster_manager');
  const activeClusters = managerScope.gauge('active_clusters', 'NeverImport');
  const clusterAdded = managerScope.counter('cluster_added');
  const clusterModified = managerScope.counter('cluster_modified');
  const clusterRemoved = managerScope.counter('cluster_removed');
  let panicOverride: number | undefined;
  let local: LocalCluster | null = null;
  const onOutcome = options.onOutcome;
  const reporter = (name: string, settings: ClusterSettings): ClusterRuntime['outcome'] =>
    onOutcome && (settings.hasOutlierDetection || settings.hasHealthChecks)
      ? (host, status) => onOutcome({ name, settings }, host.address, status)
      : undefined;
  const release = (hosts: UpstreamHost[]) => {
    if (hosts.length > 0) options.onHostsRemoved?.(hosts);
  };

  function build(
    name: string,
    entry: ClusterEntry,
    previous: Managed<Traffic | undefined> | undefined,
  ): Managed<Traffic | undefined> {
    const settings = clusterSettings(entry.config);
    const scope = ctx.stats.scope(`cluster.${settings.statName}`);
    const before = previous?.byAddress ?? new Map<string, UpstreamHost>();
    const { hosts, byAddress, added, healthy, degraded, excluded, maxWeight } = walkMembers(
      entry.hosts,
      before,
      previous?.runtime.hosts,
    );
    const removed = before.size - (byAddress.size - added);
    if (added > 0 || removed > 0) control.counter(`cluster.${settings.statName}.membership_change`).inc();
    if (removed > 0) {
      const gone: UpstreamHost[] = [];
      for (const h of before.values()) if (byAddress.get(h.address) !== h) gone.push(h);
      release(gone);
    }
    scope.gauge('membership_total', 'NeverImport').set(hosts.length);
    scope.gauge('membership_healthy', 'NeverImport').set(healthy);
    scope.gauge('membership_degraded', 'NeverImport').set(degraded);
    scope.gauge('membership_excluded', 'NeverImport').set(excluded);
    scope.gauge('max_host_weight', 'NeverImport').set(maxWeight);
    const memory = previous?.memory ?? { seed: random(), rrIndexes: [] };
    const panicThreshold = Math.min(100, panicOverride ?? settings.healthyPanicThreshold);
    let lb: LoadBalancer;
    try {
      const controlScope = control.scope(`cluster.${settings.statName}`);
      lb = buildLoadBalancer({ hosts, settings, panicThreshold, random, memory, scope, controlScope, local });
    } catch (err) {
      log.error({ err, cluster: name }, `cluster '${name}': load balancer not built, no host will be chosen`);
      lb = NO_HOST;
    }
    const built = {
      name,
      settings,
      hosts,
      lb,
      scope,
      config: entry.config,
      secrets: () => secretsOf(ctx.store.state),
      outcome: reporter(name, settings),
    };
    const traffic = options.traffic?.(built, previous?.runtime.traffic);
    return {
      entry,
      byAddress,
      memory,
      sweeper: sweeperFor(name, settings, previous),
      runtime: { ...built, traffic },
    };
  }

  /** The previous sweeper when the interval is unchanged, a new one for ORIGINAL_DST, else none. */
  function sweeperFor(
    name: string,
    settings: ClusterSettings,
    previous: Managed<Traffic | undefined> | undefined,
  ): NodeJS.Timeout | null {
    const before = previous?.sweeper ?? null;
    const interval = settings.cleanupIntervalMs;
    if (
      before &&
      settings.type === 'ORIGINAL_DST' &&
      previous?.runtime.settings.cleanupIntervalMs === interval
    )
      return before;
    if (before) clearInterval(before);
    if (settings.type !== 'ORIGINAL_DST') return null;
    const timer = setInterval(() => release(managed.get(name)?.runtime.lb.sweep?.() ?? []), interval);
    timer.unref();
    return timer;
  }

  /** Stops a cluster's sweeper and hands back every host it had, configured or created. */
  function retire(m: Managed<Traffic | undefined>): void {
    if (m.sweeper) clearInterval(m.sweeper);
    release([...m.byAddress.values(), ...(m.runtime.lb.sweep?.(true) ?? [])]);
  }

  // A change of the runtime panic threshold or of the local cluster rebuilds every balancer
  // (each compares its localities with the local cluster's).
  const managed = followClusters<Managed<Traffic | undefined>>(ctx.store, {
    restart(state) {
      const override = runtimePanicThreshold(state);
      const nextLocal = localClusterOf(state, local);
      const restart = override !== panicOverride || nextLocal !== local;
      panicOverride = override;
      local = nextLocal;
      return restart;
    },
    added(name, entry) {
      clusterAdded.inc();
      return build(name, entry, undefined);
    },
    changed(name, entry, previous) {
      if (previous.entry.config !== entry.config) clusterModified.inc();
      return build(name, entry, previous);
    },
    removed(_name, m) {
      retire(m);
      clusterRemoved.inc();
    },
    settled: (count) => activeClusters.set(count),
  });
  return {
    get: (name) => managed.get(name)?.runtime,
    all: () => Array.from(managed.values(), (m) => m.runtime),
    hostStats: (cluster, address) => {
      const m = managed.get(cluster);
      return (m?.byAddress.get(address) ?? m?.memory.destinations?.get(address)?.host)?.stats;
    },
    createdHosts: (cluster) =>
      Array.from(managed.get(cluster)?.memory.destinations?.values() ?? [], (d) => d.host),
    close() {
      managed.close();
      for (const m of managed.values()) retire(m);
    },
  };
}
