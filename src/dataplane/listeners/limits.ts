/**
 * The reference's runtime connection limits, read at each accept so that `/runtime_modify`
 * applies to the next connection: `overload.global_downstream_max_connections` (every
 * listener of the process together) and `envoy.resource_limits.listener.<name>.connection_limit`
 * (one listener; `proxy.` spelling too). See docs/overload.md.
 */

import type { State } from '../../../reducers/index.js';
import { runtimeValue } from '../../../reducers/runtime.js';
import { globalConnectionLimit } from '../../config/overload.js';

/** The runtime key of the process-wide limit. */
export const GLOBAL_LIMIT_KEY = 'overload.global_downstream_max_connections';

/** The runtime keys of a listener's limit, the first set one applying. */
export function listenerLimitKeys(name: string): string[] {
  return ['proxy', 'envoy'].map((p) => `${p}.resource_limits.listener.${name}.connection_limit`);
}

/**
 * Which of `of` data-plane processes this one is (`index` from 0): with `--concurrency N`
 * each worker enforces its share of a limit, so that the processes together never exceed it.
 */
export interface WorkerSlice {
  index: number;
  of: number;
}

export const WHOLE: WorkerSlice = { index: 0, of: 1 };

/** Worker `index`'s share of `limit`: `floor(limit / of)`, the first `limit % of` workers one more. */
export function shareOf(limit: number, slice: WorkerSlice): number {
  const base = Math.floor(limit / slice.of);
  return slice.index < limit % slice.of ? base + 1 : base;
}

/** A runtime value as a limit: a non-negative integer, otherwise none (as the reference's getInteger default). */
function limitOf(state: State, keys: readonly string[]): number {
  for (const key of keys) {
    const raw = runtimeValue(state, key)?.trim();
    if (raw !== undefined && /^\d+$/.test(raw)) return Number(raw);
  }
  return Number.POSITIVE_INFINITY;
}

/** The process-wide limit: the overload manager's monitor when it has one, else the runtime key. */
function globalLimitOf(state: State): number {
  return globalConnectionLimit(state.bootstrap?.config) ?? limitOf(state, [GLOBAL_LIMIT_KEY]);
}

/** Why a connection was refused: the stat it counts in. */
export type Overflow = 'downstream_global_cx_overflow' | 'downstream_cx_overflow';

/**
 * The open downstream connections of this process, in total and per listener name (a
 * listener updated in place keeps counting the connections of its previous config).
 */
export class ConnectionLimits {
  private total = 0;
  private readonly byListener = new Map<string, number>();

  constructor(
    private readonly state: () => State,
    private readonly slice: WorkerSlice = WHOLE,
  ) {}

  /**
   * Takes one connection for `listener`, or says which limit refuses it: the global one is
   * checked first, as the reference checks it before the listener sees the socket. The
   * overload manager's `global_downstream_max_connections` monitor sets the global limit in
   * place of the runtime key; a listener with `ignore_global_conn_limit` (or
   * `bypass_overload_manager`) neither meets it nor counts in it (`exempt`).
   */
  admit(listener: string, exempt = false): Overflow | null {
    const state = this.state();
    if (!exempt && this.total >= this.share(globalLimitOf(state))) return 'downstream_global_cx_overflow';
    const open = this.byListener.get(listener) ?? 0;
    if (open >= this.share(limitOf(state, listenerLimitKeys(listener)))) return 'downstream_cx_overflow';
    if (!exempt) this.total += 1;
    this.byListener.set(listener, open + 1);
    return null;
  }

  /** Gives back a connection `admit` took (with the same `exempt`). */
  release(listener: string, exempt = false): void {
    if (!exempt) this.total -= 1;
    const open = (this.byListener.get(listener) ?? 1) - 1;
    if (open > 0) this.byListener.set(listener, open);
    else this.byListener.delete(listener);
  }

  private share(limit: number): number {
    return limit === Number.POSITIVE_INFINITY ? limit : shareOf(limit, this.slice);
  }
}
