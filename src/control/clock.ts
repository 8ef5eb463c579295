/**
 * The control plane's clock: wall-clock milliseconds as they were when the process started,
 * moved on by the monotonic clock since. Envelope `at` stamps, merge windows, outlier
 * ejections, health and load-report intervals all measure durations between its readings,
 * which a step of the wall clock (NTP, `date -s`, a resumed VM) must not bend: with
 * `Date.now()` a step back of an hour held a merge window's health updates for that hour and
 * kept an ejected host out for it. `process.hrtime` is CLOCK_MONOTONIC, one clock for every
 * thread, so a worker thread that takes its primary's origin reads the very same time.
 * Certificate expiry, access-log start times and trace spans stay on the wall clock.
 */
import type { SchedulerLike } from 'rxjs';
import { asyncScheduler } from '../rx.js';

const monotonicMs = () => Number(process.hrtime.bigint()) / 1e6;

/** Wall-clock milliseconds when the monotonic clock read 0. */
let origin = Date.now() - monotonicMs();

/** The clock's reading now. */
export function clockNow(): number {
  return origin + monotonicMs();
}

/** This thread's origin, for a worker thread to take (`adoptClockOrigin`). */
export function clockOrigin(): number {
  return origin;
}

/** A worker thread reads the primary's clock, whatever the wall clock did since it started. */
export function adoptClockOrigin(primaryOrigin: number): void {
  origin = primaryOrigin;
}

/** RxJS's async scheduler (its timers are Node's, already monotonic) with `clockNow` for `now`. */
export const monotonicScheduler: SchedulerLike = {
  now: clockNow,
  schedule: (...args: Parameters<SchedulerLike['schedule']>) => asyncScheduler.schedule(...args),
} as SchedulerLike;
