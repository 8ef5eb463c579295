/**
 * Initialisation's wait on discovery: every target (`cds:*`, `eds:<service>`, ...) wanted before
 * it is done holds it until its first response (accepted or rejected) or its source's
 * `initial_fetch_timeout`. The targets a reconcile adds, or a response answers, are one event
 * (a thousand clusters are one wait, not a thousand).
 */
import { discoveryTimedOut, initReady, initWaiting, type ProxyEvent } from '../../../events/index.js';
import type { Loggers } from '../../logging/loggers.js';
import type { ResourceKind } from './types.js';

const targetKey = (kind: ResourceKind, name: string | null) => `${kind}:${name ?? '*'}`;

export class InitTargets {
  /** Resolves once every target is done (the server may go LIVE). */
  readonly initialized: Promise<void>;
  private resolve: () => void = () => {};
  private finished = false;
  /** The targets waited on, each with the timer of the batch it came in (null: no limit). */
  private readonly pending = new Map<string, NodeJS.Timeout | null>();
  /** Every target ever waited on: one answered is not waited on again. */
  private readonly seen = new Set<string>();
  /** Each batch's timer, with how many of its targets are still waited on. */
  private readonly timers = new Map<NodeJS.Timeout, number>();

  constructor(
    private readonly dispatch: (event: ProxyEvent, kind: ResourceKind) => void,
    private readonly log: ReturnType<Loggers['get']>,
    /** Counts a timeout (`init_fetch_timeout`) of these targets (null: every resource of the kind). */
    private readonly onTimeout: (kind: ResourceKind, names: ReadonlySet<string> | null) => void,
  ) {
    this.initialized = new Promise<void>((resolve) => {
      this.resolve = resolve;
    });
  }

  /** Waits on targets of a kind (null: every resource of it) for at most `timeoutMs` (0: no limit). */
  add(kind: ResourceKind, names: ReadonlyArray<string | null>, timeoutMs: number): void {
    if (this.finished) return;
    const fresh = names.filter((name) => !this.seen.has(targetKey(kind, name)));
    if (fresh.length === 0) return;
    const keys = fresh.map((name) => targetKey(kind, name));
    const timer = timeoutMs > 0 ? setTimeout(() => this.timedOut(kind, fresh, timeoutMs), timeoutMs) : null;
    timer?.unref();
    if (timer) this.timers.set(timer, keys.length);
    for (const key of keys) {
      this.seen.add(key);
      this.pending.set(key, timer);
    }
    this.dispatch(initWaiting({ targets: keys }), kind);
  }

  /** The targets of a batch still waited on when its timeout passes stop holding initialisation. */
  private timedOut(kind: ResourceKind, names: ReadonlyArray<string | null>, timeoutMs: number): void {
    const late = names.filter((name) => this.pending.has(targetKey(kind, name)));
    if (late.length === 0) return;
    this.log.warn(
      { kind, names: late.slice(0, 10), count: late.length },
      `${kind.toUpperCase()} initial fetch timed out after ${timeoutMs} ms`,
    );
    const named = late.filter((name): name is string => name !== null);
    this.onTimeout(kind, late.includes(null) ? null : new Set(named));
    if (named.length > 0) this.dispatch(discoveryTimedOut({ kind, names: named }), kind);
    this.done(kind, late);
  }

  /** Targets answered (or timed out): one event for those still waited on. */
  done(kind: ResourceKind, names: ReadonlyArray<string | null>): void {
    const keys = names.map((name) => targetKey(kind, name)).filter((key) => this.pending.has(key));
    if (keys.length === 0) return;
    for (const key of keys) {
      const timer = this.pending.get(key);
      this.pending.delete(key);
      if (!timer) continue;
      const left = (this.timers.get(timer) ?? 1) - 1;
      if (left > 0) this.timers.set(timer, left);
      else {
        clearTimeout(timer);
        this.timers.delete(timer);
      }
    }
    this.dispatch(initReady({ targets: keys }), kind);
    // A response may add targets through the events it dispatches (the subscriptions follow
    // them in a microtask): check once they are all in.
    setImmediate(() => this.check());
  }

  /** Every target of a kind answered at once (an empty state-of-the-world response). */
  doneAllOf(kind: ResourceKind): void {
    const prefix = `${kind}:`;
    const names = [...this.pending.keys()]
      .filter((k) => k.startsWith(prefix))
      .map((k) => k.slice(prefix.length));
    this.done(
      kind,
      names.map((name) => (name === '*' ? null : name)),
    );
  }

  /** Resolves `initialized` when nothing is waited on. */
  check(): void {
    if (this.finished || this.pending.size > 0) return;
    this.finished = true;
    this.resolve();
  }

  close(): void {
    for (const timer of this.timers.keys()) clearTimeout(timer);
    this.resolve();
  }
}
