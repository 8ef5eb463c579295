import { type HostHealth, hostHealth } from '../../../reducers/settings/health.js';
import type { UpstreamHost } from '../types.js';

/** The reference's overprovisioning factor, in percent (1.4). */
export const OVERPROVISIONING_FACTOR = 140;

/** Members of one priority, split by health; `hosts` keeps discovery order. */
export interface PriorityLevel {
  readonly hosts: UpstreamHost[];
  readonly healthy: UpstreamHost[];
  readonly degraded: UpstreamHost[];
  /**
   * Members waiting for their first check (`ignore_new_hosts_until_first_hc`): in `hosts`,
   * so panic may still pick them, but out of the counts that set loads and panic.
   */
  excluded: number;
}

/** Per-priority load (percent, summing to 100) and panic, recomputed on every rebuild. */
export interface PriorityLoads {
  readonly levels: PriorityLevel[];
  readonly healthyLoad: number[];
  readonly degradedLoad: number[];
  readonly panic: boolean[];
}

/** Hosts grouped by priority: one level per priority up to the highest one present. */
export function groupByPriority(hosts: readonly UpstreamHost[]): PriorityLevel[] {
  const levels: PriorityLevel[] = [];
  const make = (): PriorityLevel => ({ hosts: [], healthy: [], degraded: [], excluded: 0 });
  levels.push(make());
  for (const host of hosts) {
    const priority = host.state.priority;
    while (levels.length <= priority) levels.push(make());
    const level = levels[priority]!;
    level.hosts.push(host);
    if (host.state.pendingActiveHc) level.excluded++;
    const health: HostHealth = hostHealth(host.state);
    if (health === 'healthy') level.healthy.push(host);
    else if (health === 'degraded') level.degraded.push(host);
  }
  return levels;
}

/** Integer share of `part` in `count`, scaled by the overprovisioning factor, capped at 100. */
function availability(part: number, count: number): number {
  return count === 0 ? 0 : Math.min(100, Math.floor((OVERPROVISIONING_FACTOR * part) / count));
}

/** Assigns load walking priorities in order; returns the first available priority and what is left. */
function distribute(out: number[], available: number[], total: number, normalized: number): [number, number] {
  let first = -1;
  let left = total;
  for (let i = 0; i < available.length; i++) {
    const a = available[i]!;
    if (first < 0 && a > 0) first = i;
    out[i] = Math.min(left, Math.floor((a * 100) / normalized));
    left -= out[i]!;
  }
  return [first, left];
}

/**
 * The reference's priority load and panic computation (`recalculatePerPriorityState`,
 * `recalculatePerPriorityPanic`, `recalculateLoadInTotalPanic`), integer arithmetic included.
 * `panicThreshold` is a percent already capped at 100.
 */
export function priorityLoads(levels: PriorityLevel[], panicThreshold: number): PriorityLoads {
  const n = levels.length;
  const health = levels.map((l) => availability(l.healthy.length, l.hosts.length - l.excluded));
  const degraded = levels.map((l) => availability(l.degraded.length, l.hosts.length - l.excluded));
  const healthyLoad = new Array<number>(n).fill(0);
  const degradedLoad = new Array<number>(n).fill(0);
  const panic = new Array<boolean>(n).fill(false);
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const normalized = Math.min(100, sum(health) + sum(degraded));
  if (normalized > 0) {
    const [firstHealthy, left] = distribute(healthyLoad, health, 100, normalized);
    const [firstDegraded, rest] = distribute(degradedLoad, degraded, left, normalized);
    if (rest !== 0) {
      if (firstHealthy >= 0) healthyLoad[firstHealthy]! += rest;
      else degradedLoad[firstDegraded]! += rest;
    }
  }
  if (normalized === 0 && panicThreshold === 0) {
    healthyLoad[0] = 100;
    return { levels, healthyLoad, degradedLoad, panic };
  }
  for (let i = 0; i < n; i++) {
    const l = levels[i]!;
    const count = l.hosts.length - l.excluded;
    const percent = count === 0 ? 0 : (100 * l.healthy.length) / count + (100 * l.degraded.length) / count;
    panic[i] = normalized === 100 ? false : percent < panicThreshold;
  }
  if (panic.every(Boolean)) {
    const total = sum(levels.map((l) => l.hosts.length));
    degradedLoad.fill(0);
    if (total === 0) {
      healthyLoad.fill(0);
      healthyLoad[0] = 100;
    } else {
      let left = 100;
      let firstNonEmpty = -1;
      for (let i = 0; i < n; i++) {
        const count = levels[i]!.hosts.length;
        if (firstNonEmpty < 0 && count > 0) firstNonEmpty = i;
        healthyLoad[i] = Math.floor((100 * count) / total);
        left -= healthyLoad[i]!;
      }
      healthyLoad[firstNonEmpty]! += left;
    }
  }
  return { levels, healthyLoad, degradedLoad, panic };
}

/**
 * The priority for a draw `h` in 1..100: walk healthy loads, then degraded loads. Returns
 * `priority * 2`, plus 1 when the degraded hosts of that priority are to be used (one
 * number, so the request path allocates nothing); -1 when loads do not reach `h`.
 */
export function choosePriority(loads: PriorityLoads, h: number): number {
  let aggregate = 0;
  const { healthyLoad, degradedLoad } = loads;
  for (let p = 0; p < healthyLoad.length; p++) {
    aggregate += healthyLoad[p]!;
    if (h <= aggregate) return p * 2;
  }
  for (let p = 0; p < degradedLoad.length; p++) {
    aggregate += degradedLoad[p]!;
    if (h <= aggregate) return p * 2 + 1;
  }
  return -1;
}
