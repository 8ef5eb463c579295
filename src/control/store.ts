import type { Observable, SchedulerLike, Subscription } from 'rxjs';
import type { Envelope, ProxyEvent } from '../../events/index.js';
import { hostsChange, type ReceivedHosts } from '../../reducers/host-change.js';
import { foldAll, initialState, mergeWindowMs, type State } from '../../reducers/index.js';
import { BehaviorSubject, observeOn, queueScheduler, Subject } from '../rx.js';
import { monotonicScheduler } from './clock.js';
import { type MergeWindowStats, mergeWindow } from './merge-window.js';

export interface StoreOptions {
  /**
   * Drives `at` stamps and merge-window timers; a virtual-time scheduler in tests and replays.
   * Default: the monotonic clock (`clock.ts`), which a step of the wall clock does not move.
   */
  scheduler?: SchedulerLike;
  initial?: State;
  /** First sequence number minus one (a replay that starts from a checkpoint). */
  seq?: number;
}

/**
 * The control plane: events in, immutable snapshots out. The fold is the NgRx one:
 * `observeOn(queueScheduler)` makes a dispatch from inside a subscriber wait its turn
 * instead of re-entering the reducer, so snapshots come out in sequence order.
 */
export class Store {
  readonly scheduler: SchedulerLike;
  /** Every envelope as it was ingested, before the merge window. */
  readonly ingested$: Observable<Envelope<ProxyEvent>>;
  /** Every batch as it reached the reducer, with the snapshot it produced. */
  readonly applied$: Observable<{ batch: Envelope<ProxyEvent>[]; state: State }>;
  readonly mergeStats: MergeWindowStats = { merged: 0, cancelled: 0, outOfWindow: 0 };
  private readonly input = new Subject<Envelope<ProxyEvent>>();
  private readonly applied = new Subject<{ batch: Envelope<ProxyEvent>[]; state: State }>();
  private readonly states: BehaviorSubject<State>;
  private readonly subscription: Subscription;
  private seq: number;

  constructor(options: StoreOptions = {}) {
    this.scheduler = options.scheduler ?? monotonicScheduler;
    this.seq = options.seq ?? options.initial?.seq ?? 0;
    this.states = new BehaviorSubject(options.initial ?? initialState);
    this.ingested$ = this.input.asObservable();
    this.applied$ = this.applied.asObservable();
    this.subscription = this.input
      .pipe(
        observeOn(queueScheduler),
        mergeWindow((cluster) => mergeWindowMs(this.states.value, cluster), this.scheduler, this.mergeStats),
      )
      .subscribe((batch) => {
        const state = foldAll(this.states.value, batch);
        this.states.next(state);
        this.applied.next({ batch, state });
      });
  }

  /** The latest snapshot. */
  get state(): State {
    return this.states.value;
  }

  /** Snapshots, the latest first (replayed to each new subscriber). */
  get state$(): Observable<State> {
    return this.states.asObservable();
  }

  /** Stamps an event and folds it in; returns the envelope. */
  dispatch(event: ProxyEvent, source: string): Envelope<ProxyEvent> {
    this.seq += 1;
    const env: Envelope<ProxyEvent> = { seq: this.seq, at: this.scheduler.now(), source, event };
    this.input.next(env);
    return env;
  }

  /**
   * Takes the members an edge received for a cluster and dispatches the change they make to
   * the latest snapshot (`hostsChange`), or nothing when they make none (null).
   */
  receiveHosts(received: ReceivedHosts, source: string): Envelope<ProxyEvent> | null {
    const event = hostsChange(this.state, received);
    return event ? this.dispatch(event, source) : null;
  }

  /**
   * Numbers the next event `seq + 1`: a restarted server appending to the event log of an
   * earlier run keeps the file one ascending sequence. Call it before the first dispatch.
   */
  continueAfter(seq: number): void {
    this.seq = Math.max(this.seq, seq);
  }

  /**
   * Folds a batch another store's merge window released, as that store folded it: a worker
   * thread follows its primary's snapshots exactly, without a merge window of its own.
   */
  fold(batch: Envelope<ProxyEvent>[]): void {
    for (const env of batch) this.seq = Math.max(this.seq, env.seq);
    const state = foldAll(this.states.value, batch);
    this.states.next(state);
    this.applied.next({ batch, state });
  }

  /** Delivers what the merge window holds and stops. */
  close(): void {
    this.input.complete();
    this.subscription.unsubscribe();
  }
}
