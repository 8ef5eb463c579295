import { performance } from 'node:perf_hooks';
import type { ServerContext } from '../server/context.js';

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
const samplers = new WeakMap<ServerContext, ContentionFigures>();

/** Starts sampling for `ctx`; returns the step that stops it. */
export function startContentionSampler(ctx: ServerContext): () => void {
  const figures: ContentionFigures = { numContentions: 0, currentWaitNs: 0, lifetimeWaitNs: 0 };
  samplers.set(ctx, figures);
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

/** The figures so far, or undefined when tracing is off for this server. */
export function contentionFigures(ctx: ServerContext): ContentionFigures | undefined {
  return samplers.get(ctx);
}
