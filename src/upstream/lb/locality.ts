import type { Locality } from '../../../events/config.js';
import { hostHealth } from '../../../reducers/settings/health.js';
import type { HostState } from '../../../reducers/state.js';
import type { Counter } from '../../stats/store.js';
import type { UpstreamHost } from '../types.js';
import { EdfScheduler } from './edf.js';
import type { BalancerInput } from './input.js';
import { OVERPROVISIONING_FACTOR, type PriorityLevel } from './priority.js';

export const localityKey = (l: Locality): string => `${l.region}/${l.zone}/${l.sub_zone}`;

/** The members of one locality within a priority, split by health, with the locality's weight. */
export interface LocalityGroup {
  readonly key: string;
  /** The locality's `load_balancing_weight`; 0 when its group set none. */
  readonly weight: number;
  readonly hosts: UpstreamHost[];
  readonly healthy: UpstreamHost[];
  readonly degraded: UpstreamHost[];
}

/**
 * A priority's members by locality: the proxy's own locality first (when `localKey` names
 * one the priority has), then the others sorted by key, so every build orders them alike.
 */
export function groupByLocality(
  level: PriorityLevel,
  localKey: string | null,
  scale?: ReadonlyMap<string, number>,
): LocalityGroup[] {
  const byKey = new Map<string, LocalityGroup>();
  for (const host of level.hosts) {
    const key = localityKey(host.state.locality);
    let group = byKey.get(key);
    if (!group) {
      const weight = (host.state.localityWeight ?? 0) * (scale?.get(key) ?? 1);
      group = { key, weight, hosts: [], healthy: [], degraded: [] };
      byKey.set(key, group);
    }
    group.hosts.push(host);
  }
  for (const h of level.healthy) byKey.get(localityKey(h.state.locality))?.healthy.push(h);
  for (const h of level.degraded) byKey.get(localityKey(h.state.locality))?.degraded.push(h);
  return [...byKey.values()].sort((a, b) =>
    a.key === localKey ? -1 : b.key === localKey ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0,
  );
}

/**
 * `locality_weighted_lb_config`: a locality of the chosen priority is picked by EDF over its
 * effective weight, the locality weight scaled by its available share (healthy, or degraded,
 * hosts over all, times the overprovisioning factor, capped at 1), as the reference does.
 */
interface Weighted {
  readonly index: number;
  readonly weight: number;
}
const weightOf = (w: Weighted): number => w.weight;

export class LocalityWeights {
  private readonly healthy: Array<EdfScheduler<Weighted> | null>;
  private readonly degraded: Array<EdfScheduler<Weighted> | null>;

  constructor(groups: LocalityGroup[][]) {
    this.healthy = groups.map((g) => LocalityWeights.schedule(g, (l) => l.healthy.length));
    this.degraded = groups.map((g) => LocalityWeights.schedule(g, (l) => l.degraded.length));
  }

  private static schedule(groups: LocalityGroup[], available: (g: LocalityGroup) => number) {
    const scheduler = new EdfScheduler<Weighted>();
    let any = false;
    groups.forEach((g, i) => {
      if (g.hosts.length === 0) return;
      const share = Math.min(1, (OVERPROVISIONING_FACTOR / 100) * (available(g) / g.hosts.length));
      const effective = g.weight * share;
      if (effective <= 0) return;
      scheduler.add(effective, { index: i, weight: effective });
      any = true;
    });
    return any ? scheduler : null;
  }

  /** A locality index of `priority`, or -1 when none has an effective weight. */
  pick(priority: number, degraded: boolean): number {
    const scheduler = (degraded ? this.degraded : this.healthy)[priority];
    return scheduler?.pickAndAdd(weightOf)?.index ?? -1;
  }
}

/** Healthy share of `hosts` in 1/10000ths per locality, in `keys` order. */
function percentages(counts: number[]): number[] {
  const total = counts.reduce((a, b) => a + b, 0);
  return counts.map((c) => (total === 0 ? 0 : Math.floor((10000 * c) / total)));
}

/**
 * Zone-aware routing (`zone_aware_lb_config`), the reference's `ZoneAwareLoadBalancerBase`
 * for priority 0: compare the share of healthy upstream hosts in each locality with the share
 * of healthy local-cluster hosts there. When the local locality has at least its share
 * upstream every request stays in it (`all_directly`); otherwise a request stays with
 * probability upstream/local share (`sampled`) and the rest cross to the localities with
 * residual capacity, in proportion to it (`cross_zone`).
 */
export class ZoneRouting {
  /** 'direct', 'residual', or null when zone-aware routing does not apply to this build. */
  private readonly mode: 'direct' | 'residual' | null = null;
  private localPercentToRoute = 0;
  private readonly residual: number[] = [];
  private readonly localPanic: boolean;
  private readonly allDirectly: Counter;
  private readonly sampled: Counter;
  private readonly crossZone: Counter;
  private readonly noCapacityLeft: Counter;
  private readonly localNotOk: Counter;

  constructor(
    private readonly input: BalancerInput,
    groups: LocalityGroup[],
    healthyUpstream: number,
  ) {
    const scope = input.scope;
    this.allDirectly = scope.counter('lb_zone_routing_all_directly');
    this.sampled = scope.counter('lb_zone_routing_sampled');
    this.crossZone = scope.counter('lb_zone_routing_cross_zone');
    this.noCapacityLeft = scope.counter('lb_zone_no_capacity_left');
    this.localNotOk = scope.counter('lb_local_cluster_not_ok');
    const local = input.local as NonNullable<BalancerInput['local']>;
    this.localPanic = ZoneRouting.inPanic(local.hosts, input.panicThreshold);
    const localKey = localityKey(local.locality);
    if (groups.length < 2 || groups[0]?.key !== localKey) return;
    const control = input.controlScope ?? scope;
    if (healthyUpstream < input.settings.zoneAware.minClusterSize) {
      control.counter('lb_zone_cluster_too_small').inc();
      return;
    }
    const localHealthy = new Map<string, number>();
    for (const h of local.hosts)
      if (hostHealth(h) === 'healthy') {
        const key = localityKey(h.locality);
        localHealthy.set(key, (localHealthy.get(key) ?? 0) + 1);
      }
    const localShare = percentages(groups.map((g) => localHealthy.get(g.key) ?? 0));
    const upstreamShare = percentages(groups.map((g) => g.healthy.length));
    if ((upstreamShare[0] as number) >= (localShare[0] as number)) {
      this.mode = 'direct';
      return;
    }
    this.mode = 'residual';
    this.localPercentToRoute = Math.floor(((upstreamShare[0] as number) * 10000) / (localShare[0] as number));
    this.residual.push(0);
    for (let i = 1; i < groups.length; i++) {
      const spare = (upstreamShare[i] as number) - (localShare[i] as number);
      this.residual.push((this.residual[i - 1] as number) + Math.max(0, spare));
    }
  }

  /** The reference's global panic of the local cluster: healthy and degraded below the threshold. */
  private static inPanic(hosts: readonly HostState[], threshold: number): boolean {
    if (hosts.length === 0) return true;
    let up = 0;
    for (const h of hosts) if (hostHealth(h) !== 'unhealthy') up++;
    return (100 * up) / hosts.length < threshold;
  }

  /** Whether zone-aware routing applies at all (at least two localities, the local one first, enough hosts). */
  get active(): boolean {
    return this.mode !== null;
  }

  /** The locality index for this request, or -1 to use the whole priority. */
  pick(): number {
    const random = this.input.random;
    if (random() % 100 >= this.input.settings.zoneAware.routingEnabled) return -1;
    if (this.localPanic) {
      this.localNotOk.inc();
      return -1;
    }
    if (this.mode === 'direct') {
      this.allDirectly.inc();
      return 0;
    }
    if (random() % 10000 < this.localPercentToRoute) {
      this.sampled.inc();
      return 0;
    }
    this.crossZone.inc();
    const n = this.residual.length;
    const total = this.residual[n - 1] as number;
    if (total === 0) {
      this.noCapacityLeft.inc();
      return random() % n;
    }
    // Locality i's bucket is [residual[i - 1], residual[i]); the local zone's is empty.
    const threshold = random() % total;
    let i = 0;
    while (threshold >= (this.residual[i] as number)) i++;
    return i;
  }
}
