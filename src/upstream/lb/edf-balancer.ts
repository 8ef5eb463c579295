import type { Counter } from '../../stats/store.js';
import type { LbContext, LoadBalancer, UpstreamHost } from '../types.js';
import { EdfScheduler } from './edf.js';
import type { BalancerInput } from './input.js';
import {
  groupByLocality,
  type LocalityGroup,
  LocalityWeights,
  localityKey,
  ZoneRouting,
} from './locality.js';
import { choosePriority, groupByPriority, type PriorityLoads, priorityLoads } from './priority.js';

const ALL = 0;
const HEALTHY = 1;
const DEGRADED = 2;

/** True when every host has the same weight: a plain rotation then replaces the EDF schedule. */
export function weightsAreEqual(hosts: readonly UpstreamHost[]): boolean {
  const first = hosts[0];
  return hosts.every((h) => h.state.weight === first?.state.weight);
}

/**
 * The reference's `EdfLoadBalancerBase`: pick a priority with a random draw, use all of its
 * hosts when it is in panic, else its healthy (or degraded) hosts; then an EDF schedule
 * when their weights differ, or the subclass's unweighted pick when they are equal.
 * With locality-weighted balancing or zone-aware routing, a locality of the priority is
 * picked first and its hosts are the source. A host source is numbered `priority * 3 + kind`,
 * plus `slots * (locality + 1)` for one locality's hosts.
 */
export abstract class EdfBalancer implements LoadBalancer {
  protected readonly loads: PriorityLoads;
  private readonly panicCounter: Counter;
  /** Per source: undefined before first use, null for equal weights, else the schedule. */
  private readonly schedulers: Array<EdfScheduler<UpstreamHost> | null | undefined> = [];
  /** Sources per priority level: the stride of a locality's sources. */
  private readonly slots: number;
  /** Per priority, its localities; empty unless localities matter to this cluster. */
  private readonly localities: LocalityGroup[][] = [];
  private readonly weights: LocalityWeights | null = null;
  private readonly zone: ZoneRouting | null = null;

  constructor(protected readonly input: BalancerInput) {
    this.loads = priorityLoads(groupByPriority(input.hosts), input.panicThreshold);
    this.panicCounter = input.scope.counter('lb_healthy_panic');
    const levels = this.loads.levels;
    this.slots = levels.length * 3;
    const local = input.local ?? null;
    if (input.settings.localityWeighted || local) {
      const localKey = local ? localityKey(local.locality) : null;
      this.localities = levels.map((l) => groupByLocality(l, localKey, input.localityScale));
      if (input.settings.localityWeighted) this.weights = new LocalityWeights(this.localities);
      else {
        const zone = new ZoneRouting(input, this.localities[0] ?? [], levels[0]?.healthy.length ?? 0);
        if (zone.active) this.zone = zone;
      }
    }
    // Healthy sources carry nearly all traffic: build them now so an update's cost is paid here.
    if (this.usesSchedule())
      for (let p = 0; p < this.loads.levels.length; p++) this.scheduler(p * 3 + HEALTHY);
  }

  /** False for balancers that ignore weights, so no schedule is built for them. */
  protected usesSchedule(): boolean {
    return true;
  }

  /** Weight of a host in the EDF schedule at the moment it is (re)added. */
  protected abstract weightOf(host: UpstreamHost): number;

  /** Choice among equally weighted hosts (non-empty). */
  protected abstract unweightedPick(hosts: UpstreamHost[], source: number): UpstreamHost;

  choose(_context: LbContext): UpstreamHost | null {
    const source = this.hostSource();
    if (source < 0) return null;
    const scheduler = this.scheduler(source);
    if (scheduler) return scheduler.pickAndAdd(this.weigh);
    const hosts = this.sourceHosts(source);
    return hosts.length === 0 ? null : this.unweightedPick(hosts, source);
  }

  private readonly weigh = (host: UpstreamHost): number => this.weightOf(host);

  /** The host source for this request, or -1 when no priority takes it. */
  protected hostSource(): number {
    const pick = choosePriority(this.loads, (this.input.random() % 100) + 1);
    if (pick < 0) return -1;
    const priority = pick >> 1;
    if (this.loads.panic[priority]) {
      this.panicCounter.inc();
      return priority * 3 + ALL;
    }
    const degraded = (pick & 1) === 1;
    const base = priority * 3 + (degraded ? DEGRADED : HEALTHY);
    let locality = -1;
    if (this.weights) locality = this.weights.pick(priority, degraded);
    else if (this.zone && priority === 0 && !degraded) locality = this.zone.pick();
    if (locality < 0) return base;
    const source = base + this.slots * (locality + 1);
    // A locality without hosts of that health (the local one, when sent there directly) is no source.
    return this.sourceHosts(source).length > 0 ? source : base;
  }

  protected sourceHosts(source: number): UpstreamHost[] {
    const locality = Math.floor(source / this.slots) - 1;
    const base = source % this.slots;
    const priority = Math.floor(base / 3);
    const kind = base % 3;
    const group = locality < 0 ? this.loads.levels[priority]! : this.localities[priority]![locality]!;
    return kind === ALL ? group.hosts : kind === HEALTHY ? group.healthy : group.degraded;
  }

  private scheduler(source: number): EdfScheduler<UpstreamHost> | null {
    let scheduler = this.schedulers[source];
    if (scheduler !== undefined) return scheduler;
    const hosts = this.sourceHosts(source);
    scheduler = null;
    if (!weightsAreEqual(hosts)) {
      scheduler = new EdfScheduler<UpstreamHost>();
      for (const host of hosts) scheduler.add(this.weightOf(host), host);
      // The reference advances a fresh schedule by seed % n picks so that instances do not align.
      const skip = this.input.memory.seed % hosts.length;
      for (let i = 0; i < skip; i++) scheduler.pickAndAdd(this.weigh);
    }
    this.schedulers[source] = scheduler;
    return scheduler;
  }
}
