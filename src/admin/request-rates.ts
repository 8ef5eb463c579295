/**
 * Request rates per host for `/clusters?format=html`. Host counters are totals; a rate
 * needs two readings, so each reading of the page is kept for a while and the rate is
 * the change since the latest reading at least a second old (the page's previous reload).
 */

import type { State } from '../../reducers/state.js';
import type { ClustersFigures } from '../../views/clusters/figures.js';

/** Readings older than this are forgotten: the rate is over at most this long. */
const WINDOW_MS = 30_000;
/** A reading this recent is too close to the current one to rate anything. */
const MIN_SPAN_MS = 1000;

interface Reading {
  at: number;
  totals: Map<string, number>;
}

const key = (cluster: string, address: string) => `${cluster}\u0000${address}`;

export class RequestRates {
  private readings: Reading[] = [];

  /** Takes a reading of every host's `rq_total` at `now` and answers rates against the past ones. */
  read(
    state: State,
    figures: ClustersFigures,
    now: number,
  ): (cluster: string, address: string) => number | null {
    const totals = new Map<string, number>();
    for (const entry of Object.values(state.clusters)) {
      for (const host of entry.hosts) {
        const counters = figures.hostStats(entry.name, host.address);
        if (counters) totals.set(key(entry.name, host.address), counters.rq_total);
      }
    }
    this.readings = this.readings.filter((r) => now - r.at <= WINDOW_MS);
    const base = this.readings.findLast((r) => now - r.at >= MIN_SPAN_MS) ?? null;
    this.readings.push({ at: now, totals });
    return (cluster, address) => {
      const k = key(cluster, address);
      const then = base?.totals.get(k);
      const current = totals.get(k);
      if (!base || then === undefined || current === undefined) return null;
      // A counter reset (`/reset_counters`) makes the total go down: no rate across it.
      if (current < then) return null;
      return ((current - then) * 1000) / (now - base.at);
    };
  }
}
