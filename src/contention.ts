/**
 * What `/contention` reports with `--enable-mutex-tracing`. Node has no mutexes on the
 * request path; the closest honest figure is the event loop being held up: a timer that
 * should fire every 10 ms and fires late was waiting for the loop to be free (the sampler,
 * an edge: `src/edges/contention-sampler.ts`).
 */
export interface ContentionFigures {
  /** Samples where the loop was late by more than 1 ms. */
  numContentions: number;
  /** Lateness of the latest sample, in nanoseconds. */
  currentWaitNs: number;
  /** Lateness summed over all late samples since start, in nanoseconds. */
  lifetimeWaitNs: number;
}

/** Figures at zero, for a server run with `--enable-mutex-tracing`. */
export function noContention(): ContentionFigures {
  return { numContentions: 0, currentWaitNs: 0, lifetimeWaitNs: 0 };
}
