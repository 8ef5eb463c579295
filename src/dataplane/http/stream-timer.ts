/** What a `StreamTimer` calls when it fires: `kind` tells which of its timers it was. */
export interface TimerTarget {
  onTimer(kind: number): void;
}

/**
 * A timeout that one stream after another arms, and that traffic restarts. Arming and
 * restarting only note the time (one clock read): the `Timeout` under it is made once and
 * left to fire, and when it fires before the deadline (the count was restarted since) it is
 * scheduled again for the rest. A request on a kept-alive connection thus costs a few clock
 * reads instead of a `Timeout` refresh per arm and per byte of traffic (each an unlink and
 * insert in Node's timer lists). A new deadline earlier than the scheduled one (a shorter
 * timeout) reschedules at once. Disarming leaves the `Timeout` scheduled: if it fires before
 * the next arm, it fires into nothing. Unreferenced: the stream's socket is what keeps the
 * process alive.
 */
export class StreamTimer {
  private timeout: NodeJS.Timeout | null = null;
  /** When the scheduled `Timeout` fires (`performance.now()` time); 0 while none is scheduled. */
  private firesAt = 0;
  private ms = 0;
  /** When the count started or was last restarted (`performance.now()` time). */
  private since = 0;
  private target: TimerTarget | null = null;
  private kind = 0;
  private readonly fireNow = (): void => this.fire();

  /** Starts counting `ms` for `target` (from now, whatever it counted before). */
  arm(ms: number, target: TimerTarget, kind: number): void {
    this.target = target;
    this.kind = kind;
    this.ms = ms;
    const now = performance.now();
    this.since = now;
    this.schedule(now + ms, now);
  }

  get armed(): boolean {
    return this.target !== null;
  }

  /** Restarts the count, when armed. */
  refresh(): void {
    if (this.target !== null) this.since = performance.now();
  }

  /** Stops counting for the current target. */
  disarm(): void {
    this.target = null;
  }

  /** No stream will arm it again (its connection closed). */
  close(): void {
    this.target = null;
    this.firesAt = 0;
    if (this.timeout !== null) clearTimeout(this.timeout);
    this.timeout = null;
  }

  /** Makes sure a `Timeout` fires by `deadline`: one that fires sooner is kept (it reschedules). */
  private schedule(deadline: number, now: number): void {
    if (this.firesAt !== 0 && this.firesAt <= deadline) return;
    if (this.timeout !== null) clearTimeout(this.timeout);
    this.firesAt = deadline;
    this.timeout = setTimeout(this.fireNow, Math.max(1, Math.ceil(deadline - now))).unref();
  }

  private fire(): void {
    this.firesAt = 0;
    const target = this.target;
    if (target === null) return;
    const now = performance.now();
    const deadline = this.since + this.ms;
    if (deadline > now) {
      this.schedule(deadline, now);
      return;
    }
    this.target = null;
    target.onTimer(this.kind);
  }
}
