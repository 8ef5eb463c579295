import { performance } from 'node:perf_hooks';

/**
 * What `/contention` reports with `--enable-mutex-tracing`. Node has no mutexes on the
 * request path; the closest honest figure is the event loop being held up: a timer that
 * should fire every `SAMPLE_MS` and fires late was waiting for the loop to be free.
 */
export interface ContentionFigures {
  /** Samples where the loop was late by more than `LATE_MS`. */
  numContentions: number;
  /** Lateness of the latest sample, in nanoseconds. */
  currentWaitNs: number;
  /** Lateness summed over all late samples since start, in nanoseconds. */
  lifetimeWaitNs: number;
}

const SAMPLE_MS = 10;
const LATE_MS = 1;

/** Figures at zero, for a server run with `--enable-mutex-tracing`. */
export function noContention(): ContentionFigures {
  return { numContentions: 0, currentWaitNs: 0, lifetimeWaitNs: 0 };
}

/** Samples the event loop into `figures`; returns the step that stops it. */
export function startContentionSampler(figures: ContentionFigures): () => void {
  let expected = performance.now() + SAMPLE_MS;
  const timer = setInterval(() => {
    const now = performance.now();
    const late = Math.max(0, now - expected);
    expected = now + SAMPLE_MS;
    figures.currentWaitNs = Math.round(late * 1e6);
    if (late > LATE_MS) {
      figures.numContentions += 1;
      figures.lifetimeWaitNs += Math.round(late * 1e6);
    }
  }, SAMPLE_MS);
  timer.unref();
  return () => clearInterval(timer);
}
