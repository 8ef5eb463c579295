/**
 * The in-memory past of a store, for time travel in the admin: a bounded record of the
 * envelopes that entered it and of the batches that reached the reducer, with periodic
 * checkpoints (snapshot references, free thanks to structural sharing). A past state is the
 * nearest checkpoint with the recorded batches folded on top, so the merge window's
 * decisions are reproduced exactly rather than simulated again.
 */
import type { Envelope, ProxyEvent } from '../../events/index.js';
import { foldAll, rootReducer, type State } from '../../reducers/index.js';
import type { BlameResult } from '../../views/events/blame.js';
import { valueAt } from '../../views/snapshot-diff.js';

export type { BlameResult };

/** How much of the past a `History` keeps. */
export interface HistoryOptions {
  /** Envelopes (and reducer batches) retained; older ones are forgotten. Default 10,000. */
  capacity?: number;
  /** A checkpoint every this many batches; a past state folds at most this many. Default 256. */
  checkpointEvery?: number;
  /** Sequence numbers of this run start after this one (a restart appending to an earlier run's log). */
  startSeq?: number;
}

/** A batch as the reducer received it, marked with the last sequence number ingested by then. */
interface Applied {
  mark: number;
  batch: readonly Envelope<ProxyEvent>[];
}

interface Checkpoint {
  /** Absolute count of batches folded into `state`. */
  index: number;
  mark: number;
  state: State;
}

export class History {
  private readonly capacity: number;
  private readonly checkpointEvery: number;
  private envelopes: Envelope<ProxyEvent>[] = [];
  private applies: Applied[] = [];
  /** Absolute index of `applies[0]`. */
  private applyBase = 0;
  private checkpoints: Checkpoint[];
  private lastIngested: number;
  private latest: State;

  constructor(initial: State, options: HistoryOptions = {}) {
    this.capacity = Math.max(1, options.capacity ?? 10_000);
    this.checkpointEvery = Math.max(1, options.checkpointEvery ?? 256);
    this.lastIngested = Math.max(initial.seq, options.startSeq ?? 0);
    this.latest = initial;
    this.checkpoints = [{ index: 0, mark: this.lastIngested, state: initial }];
  }

  /** Records an envelope as it entered the store. */
  recordIngested(env: Envelope<ProxyEvent>): void {
    this.lastIngested = Math.max(this.lastIngested, env.seq);
    this.envelopes.push(env);
    if (this.envelopes.length > this.capacity * 1.25) {
      this.envelopes = this.envelopes.slice(this.envelopes.length - this.capacity);
    }
  }

  /** Records a batch the reducer folded and the snapshot it produced. */
  recordApplied(batch: readonly Envelope<ProxyEvent>[], state: State): void {
    // A batch folded synchronously may be reported before its envelope's ingestion is.
    let mark = this.lastIngested;
    for (const env of batch) mark = Math.max(mark, env.seq);
    this.applies.push({ mark, batch });
    this.latest = state;
    const count = this.applyBase + this.applies.length;
    const last = this.checkpoints[this.checkpoints.length - 1] as Checkpoint;
    if (count - last.index >= this.checkpointEvery) {
      this.checkpoints.push({ index: count, mark, state });
      this.trim();
    }
  }

  /** Forgets the oldest checkpoint interval while more than `capacity` batches are held. */
  private trim(): void {
    while (this.applies.length > this.capacity && this.checkpoints.length > 1) {
      this.checkpoints.shift();
      const first = this.checkpoints[0] as Checkpoint;
      this.applies = this.applies.slice(first.index - this.applyBase);
      this.applyBase = first.index;
    }
  }

  /** Sequence number of the last envelope ingested. */
  latestSeq(): number {
    return this.lastIngested;
  }

  /** The oldest sequence number `stateAt` can still answer for. */
  oldestSeq(): number {
    return (this.checkpoints[0] as Checkpoint).mark;
  }

  /**
   * The snapshot as it stood after envelope `seq` entered the store and before the next one
   * did (including merge-window deliveries in between); null when `seq` is older than what
   * is retained or has not happened yet.
   */
  stateAt(seq: number): State | null {
    if (!Number.isInteger(seq) || seq < this.oldestSeq() || seq > this.lastIngested) return null;
    const end = this.applyBase + this.countMarkedUpTo(seq);
    if (end === this.applyBase + this.applies.length) return this.latest;
    let checkpoint = this.checkpoints[0] as Checkpoint;
    for (const c of this.checkpoints) if (c.index <= end) checkpoint = c;
    // One fold for everything since the checkpoint: equal to folding batch by batch, faster.
    const since: Envelope<ProxyEvent>[] = [];
    for (let i = checkpoint.index; i < end; i++)
      since.push(...(this.applies[i - this.applyBase] as Applied).batch);
    return foldAll(checkpoint.state, since);
  }

  /** How many retained batches carry a mark of at most `seq` (marks never decrease). */
  private countMarkedUpTo(seq: number): number {
    let lo = 0;
    let hi = this.applies.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.applies[mid] as Applied).mark <= seq) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Sequence number of the oldest envelope `envelopesSince` can still list. */
  oldestEnvelopeSeq(): number {
    return this.envelopes[0]?.seq ?? this.lastIngested + 1;
  }

  /** Retained envelopes with a sequence number above `seq`, oldest first, at most `limit`. */
  envelopesSince(seq: number, limit = Number.POSITIVE_INFINITY): Envelope<ProxyEvent>[] {
    let lo = 0;
    let hi = this.envelopes.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.envelopes[mid] as Envelope<ProxyEvent>).seq <= seq) lo = mid + 1;
      else hi = mid;
    }
    return this.envelopes.slice(lo, lo + Math.min(limit, this.envelopes.length));
  }

  /**
   * The envelope that last changed the value at `tokens` (a semantic path, see `diff.ts`),
   * found by folding the retained past one envelope at a time.
   */
  blame(tokens: readonly string[]): BlameResult {
    const start = this.checkpoints[0] as Checkpoint;
    let state = start.state;
    let value = valueAt(state, tokens);
    let everPresent = value !== undefined;
    let blamed: { envelope: Envelope<ProxyEvent>; before: unknown } | null = null;
    for (let i = start.index - this.applyBase; i < this.applies.length; i++) {
      for (const env of (this.applies[i] as Applied).batch) {
        const next = rootReducer(state, env);
        if (next === state) continue;
        state = next;
        const now = valueAt(state, tokens);
        if (now === value || sameJson(now, value)) continue;
        blamed = { envelope: env, before: value };
        value = now;
        everPresent ||= now !== undefined;
      }
    }
    if (!everPresent) return { kind: 'absent' };
    if (blamed) return { kind: 'changed', envelope: blamed.envelope, before: blamed.before, value };
    if (start.index === 0) return { kind: 'initial', value };
    return { kind: 'too-old', oldestSeq: start.mark, value };
  }
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === undefined || b === undefined) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}
