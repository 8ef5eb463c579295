/**
 * Spans waiting to be sent by one tracer of one connection manager, as the reference's tracers
 * batch them: a batch goes when `<prefix>.min_flush_spans` (runtime, default 5) spans wait, on
 * a timer of `<prefix>.flush_interval_ms` (default 5000 ms), and when the connection manager
 * closes, which waits for every batch in flight.
 */
import type { RuntimeLookup } from '../http/runtime-fraction.js';

/** A runtime integer, or the default. */
export function runtimeInt(runtime: RuntimeLookup, key: string, fallback: number): number {
  const raw = runtime(key);
  const n = Number(raw);
  return raw !== undefined && Number.isInteger(n) && n >= 0 ? n : fallback;
}

export class SpanBatch<T> {
  private pending: T[] = [];
  private timer: NodeJS.Timeout | null = null;
  private readonly inFlight = new Set<Promise<void>>();

  /**
   * `prefix`: the runtime keys' (`tracing.zipkin`); `send` sends one batch and resolves when it
   * is answered, failed or timed out (never rejects); `onTimer` counts a timer run.
   */
  constructor(
    private readonly runtime: RuntimeLookup,
    private readonly prefix: string,
    private readonly send: (spans: T[]) => Promise<void>,
    private readonly onTimer: () => void,
  ) {
    this.arm();
  }

  private arm(): void {
    const ms = runtimeInt(this.runtime, `${this.prefix}.flush_interval_ms`, 5000);
    this.timer = setTimeout(
      () => {
        this.onTimer();
        this.flush();
        this.arm();
      },
      Math.max(1, ms),
    );
    this.timer.unref();
  }

  add(span: T): void {
    this.pending.push(span);
    if (this.pending.length >= runtimeInt(this.runtime, `${this.prefix}.min_flush_spans`, 5)) this.flush();
  }

  /** Sends what waits, if anything. */
  private flush(): void {
    if (this.pending.length === 0) return;
    const spans = this.pending;
    this.pending = [];
    const sent = this.send(spans);
    this.inFlight.add(sent);
    void sent.finally(() => this.inFlight.delete(sent));
  }

  /** Stops the timer, sends what waits and waits for every batch in flight. */
  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.flush();
    await Promise.all(this.inFlight);
  }
}
