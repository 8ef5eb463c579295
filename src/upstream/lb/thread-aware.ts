import type { Counter } from '../../stats/store.js';
import { mod64 } from '../hash.js';
import type { LbContext, LoadBalancer, UpstreamHost } from '../types.js';
import type { BalancerInput } from './input.js';
import { choosePriority, groupByPriority, type PriorityLoads, priorityLoads } from './priority.js';

/** Hosts with weights scaled to sum to 1, as the reference's `normalizeWeights`. */
export interface NormalizedWeights {
  readonly hosts: UpstreamHost[];
  readonly weights: number[];
  readonly min: number;
  readonly max: number;
}

export function normalizeWeights(hosts: readonly UpstreamHost[]): NormalizedWeights {
  let sum = 0;
  for (const h of hosts) sum += h.state.weight;
  let min = 1;
  let max = 0;
  const weights = hosts.map((h) => {
    const w = h.state.weight / sum;
    min = Math.min(min, w);
    max = Math.max(max, w);
    return w;
  });
  return { hosts: [...hosts], weights, min, max };
}

/** A prebuilt lookup structure over one priority's hosts, keyed by a 64-bit hash in halves. */
export interface HashTable {
  choose(hi: number, lo: number, attempt: number): UpstreamHost | null;
}

const EMPTY: HashTable = { choose: () => null };

/**
 * The reference's `ThreadAwareLoadBalancerBase`: one table per priority over its healthy
 * hosts (all hosts when the priority is in panic); the request hash picks the priority and
 * the entry; without a hash a random 64-bit value stands in (the balancer acts as RANDOM).
 */
export class ThreadAwareBalancer implements LoadBalancer {
  private readonly loads: PriorityLoads;
  private readonly tables: HashTable[];
  private readonly panicCounter: Counter;

  constructor(
    private readonly input: BalancerInput,
    build: (weights: NormalizedWeights) => HashTable,
  ) {
    this.loads = priorityLoads(groupByPriority(input.hosts), input.panicThreshold);
    this.panicCounter = input.scope.counter('lb_healthy_panic');
    this.tables = this.loads.levels.map((level, p) => {
      const hosts = this.loads.panic[p] ? level.hosts : level.healthy;
      return hosts.length === 0 ? EMPTY : build(normalizeWeights(hosts));
    });
  }

  choose(context: LbContext): UpstreamHost | null {
    let hi: number;
    let lo: number;
    if (context.hash === null) {
      hi = this.input.random();
      lo = this.input.random();
    } else {
      hi = Number(BigInt.asUintN(32, context.hash >> 32n));
      lo = Number(BigInt.asUintN(32, context.hash));
    }
    const pick = choosePriority(this.loads, mod64(hi, lo, 100) + 1);
    if (pick < 0) return null;
    const priority = pick >> 1;
    if (this.loads.panic[priority]) this.panicCounter.inc();
    return this.tables[priority]!.choose(hi, lo, context.attempt);
  }
}
