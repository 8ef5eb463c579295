import type { OperatorFunction, SchedulerLike, Subscription } from 'rxjs';
import { type Envelope, mergeWindowOf, type ProxyEvent } from '../../events/index.js';
import { Observable } from '../rx.js';

interface Window {
  /** When the window that the last delivery opened closes. */
  closesAt: number;
  buffered: Envelope<ProxyEvent>[];
  timer: Subscription | null;
}

/** What the window saw, for the `cluster_manager.update_*` counters. */
export interface MergeWindowStats {
  merged: number;
  cancelled: number;
  outOfWindow: number;
}

/**
 * `common_lb_config.update_merge_window` as an operator. Per cluster: an update outside any
 * window passes at once and opens a window; health, weight and metadata updates inside it
 * are held and delivered together when it closes (which opens the next window). A
 * membership change passes at once, taking anything held for its cluster with it. A window
 * of 0 holds nothing. Output is batches: one batch folds into one snapshot.
 */
export function mergeWindow(
  windowMs: (cluster: string) => number,
  scheduler: SchedulerLike,
  stats: MergeWindowStats = { merged: 0, cancelled: 0, outOfWindow: 0 },
): OperatorFunction<Envelope<ProxyEvent>, Envelope<ProxyEvent>[]> {
  return (source) =>
    new Observable<Envelope<ProxyEvent>[]>((subscriber) => {
      const windows = new Map<string, Window>();

      const open = (cluster: string, ms: number, held: Envelope<ProxyEvent>[] = []) => {
        const window: Window = { closesAt: scheduler.now() + ms, buffered: held, timer: null };
        windows.set(cluster, window);
        return window;
      };

      // The next window opens when this one was due to close, not when its timer ran: a live
      // timer fires late on a busy thread, a replay's virtual one never does, and both must
      // hold and pass the same updates.
      const close = (cluster: string, window: Window) => {
        window.timer?.unsubscribe();
        window.timer = null;
        if (window.buffered.length === 0) {
          windows.delete(cluster);
          return;
        }
        const batch = window.buffered;
        stats.merged += 1;
        windows.set(cluster, { closesAt: window.closesAt + windowMs(cluster), buffered: [], timer: null });
        subscriber.next(batch);
      };

      /** Delivers, oldest first, every window already due whose timer has not run yet. */
      const closeDue = () => {
        const now = scheduler.now();
        const due = [...windows].filter(([, w]) => w.timer !== null && w.closesAt <= now);
        due.sort(([, a], [, b]) => a.closesAt - b.closesAt);
        for (const [cluster, window] of due) close(cluster, window);
      };

      const subscription = source.subscribe({
        next(env) {
          closeDue();
          const opens = mergeWindowOf(env.event);
          if (opens === null) {
            subscriber.next([env]);
            return;
          }
          const { cluster, mergeable } = opens;
          const ms = windowMs(cluster);
          const window = windows.get(cluster);
          if (!mergeable) {
            // Membership never waits; whatever was held for the cluster goes with it.
            const held = window?.buffered ?? [];
            if (window?.timer) {
              window.timer.unsubscribe();
              stats.cancelled += 1;
            }
            windows.delete(cluster);
            if (ms > 0) open(cluster, ms);
            subscriber.next([...held, env]);
            return;
          }
          if (ms <= 0) {
            subscriber.next([env]);
            return;
          }
          if (!window || scheduler.now() >= window.closesAt) {
            if (window) stats.outOfWindow += 1;
            open(cluster, ms);
            subscriber.next([env]);
            return;
          }
          window.buffered.push(env);
          if (!window.timer) {
            window.timer = scheduler.schedule(
              () => close(cluster, window),
              Math.max(0, window.closesAt - scheduler.now()),
            );
          }
        },
        error: (err) => subscriber.error(err),
        complete() {
          // Deliver what is held, so a finite replay ends on the same state as the live run did.
          for (const window of windows.values()) {
            window.timer?.unsubscribe();
            if (window.buffered.length > 0) subscriber.next(window.buffered);
          }
          windows.clear();
          subscriber.complete();
        },
      });
      return () => {
        subscription.unsubscribe();
        for (const window of windows.values()) window.timer?.unsubscribe();
      };
    });
}
