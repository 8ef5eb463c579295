/** What a `StreamTimer` calls when it fires: `kind` tells which of its timers it was. */
export interface TimerTarget {
  onTimer(kind: number): void;
}

/**
 * A timeout that one stream after another arms: its `Timeout` is made once and only
 * retargeted and refreshed, so a request on a kept-alive connection costs a refresh instead
 * of a `setTimeout` and a `clearTimeout` (an object, a closure and two timer-list updates).
 * Disarming leaves the `Timeout` scheduled: if it fires before the next arm, it fires into
 * nothing. Unreferenced: the stream's socket is what keeps the process alive.
 */
export class StreamTimer {
  private timeout: NodeJS.Timeout | null = null;
  private ms = 0;
  private target: TimerTarget | null = null;
  private kind = 0;

  /** Starts counting `ms` for `target` (from now, whatever it counted before). */
  arm(ms: number, target: TimerTarget, kind: number): void {
    this.target = target;
    this.kind = kind;
    const timeout = this.timeout;
    if (timeout !== null && this.ms === ms) {
      timeout.refresh();
      return;
    }
    if (timeout !== null) clearTimeout(timeout);
    this.ms = ms;
    this.timeout = setTimeout(() => this.fire(), ms).unref();
  }

  get armed(): boolean {
    return this.target !== null;
  }

  /** Restarts the count, when armed. */
  refresh(): void {
    if (this.target !== null) this.timeout?.refresh();
  }

  /** Stops counting for the current target. */
  disarm(): void {
    this.target = null;
  }

  /** No stream will arm it again (its connection closed). */
  close(): void {
    this.target = null;
    if (this.timeout !== null) clearTimeout(this.timeout);
    this.timeout = null;
  }

  private fire(): void {
    const target = this.target;
    this.target = null;
    target?.onTimer(this.kind);
  }
}
