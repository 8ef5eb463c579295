import { performance } from 'node:perf_hooks';
import type { ContentionFigures } from '../contention.js';

const SAMPLE_MS = 10;
const LATE_MS = 1;

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
