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
  /**
   * About how many bytes of events are retained (`weigh`); older ones are forgotten. Default
   * 64 MiB: a management server pushing 100,000 endpoints every few milliseconds makes events
   * of 10 MB each, which 10,000 of would never fit in memory.
   */
  maxBytes?: number;
  /** Sequence numbers of this run start after this one (a restart appending to an earlier run's log). */
  startSeq?: number;
}

/** A batch as the reducer received it, marked with the last sequence number ingested by then. */
interface Applied {
  mark: number;
  batch: readonly Envelope<ProxyEvent>[];
  /** `weigh` of its envelopes. */
  bytes: number;
}

/**
 * About how many bytes a value of an envelope holds on the heap: a walk of its objects, arrays
 * and strings with V8's usual sizes. An estimate, to bound the history, not a measure.
 */
export function weigh(value: unknown): number {
  if (typeof value === 'string') return 16 + value.length;
  if (typeof value !== 'object' || value === null) return 8;
  let bytes = 32;
  if (Array.isArray(value)) {
    for (const item of value) bytes += 8 + weigh(item);
    return bytes;
  }
  for (const key in value) bytes += 16 + weigh((value as Record<string, unknown>)[key]);
  return bytes;
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
  private readonly maxBytes: number;
  private envelopes: Envelope<ProxyEvent>[] = [];
  /** `weigh` of each of `envelopes`, in step with it, and their sum. */
  private envelopeBytes: number[] = [];
  private envelopesTotal = 0;
  /** Weights taken at ingestion, so a batch's envelopes are walked once. */
  private readonly weights = new WeakMap<Envelope<ProxyEvent>, number>();
  private applies: Applied[] = [];
  /** The sum of `applies`' bytes, and of those since the last checkpoint. */
  private appliesTotal = 0;
  private sinceCheckpoint = 0;
  /** Absolute index of `applies[0]`. */
  private applyBase = 0;
  private checkpoints: Checkpoint[];
  private lastIngested: number;
  private latest: State;

  constructor(initial: State, options: HistoryOptions = {}) {
    this.capacity = Math.max(1, options.capacity ?? 10_000);
    this.checkpointEvery = Math.max(1, options.checkpointEvery ?? 256);
    this.maxBytes = Math.max(1, options.maxBytes ?? 64 * 1024 * 1024);
    this.lastIngested = Math.max(initial.seq, options.startSeq ?? 0);
    this.latest = initial;
    this.checkpoints = [{ index: 0, mark: this.lastIngested, state: initial }];
  }

  /** Records an envelope as it entered the store. */
  recordIngested(env: Envelope<ProxyEvent>): void {
    this.lastIngested = Math.max(this.lastIngested, env.seq);
    const bytes = this.weightOf(env);
    this.envelopes.push(env);
    this.envelopeBytes.push(bytes);
    this.envelopesTotal += bytes;
    // Trimmed in steps of a quarter, so the copy is paid once per many envelopes; the newest
    // one always stays.
    if (this.envelopes.length <= this.capacity * 1.25 && this.envelopesTotal <= this.maxBytes * 1.25) return;
    let drop = Math.max(0, this.envelopes.length - this.capacity);
    let total = this.envelopesTotal;
    for (let i = 0; i < drop; i++) total -= this.envelopeBytes[i] as number;
    while (total > this.maxBytes && drop < this.envelopes.length - 1)
      total -= this.envelopeBytes[drop++] as number;
    this.envelopes = this.envelopes.slice(drop);
    this.envelopeBytes = this.envelopeBytes.slice(drop);
    this.envelopesTotal = total;
  }

  private weightOf(env: Envelope<ProxyEvent>): number {
    let bytes = this.weights.get(env);
    if (bytes === undefined) {
      bytes = weigh(env);
      this.weights.set(env, bytes);
    }
    return bytes;
  }

  /** Records a batch the reducer folded and the snapshot it produced. */
  recordApplied(batch: readonly Envelope<ProxyEvent>[], state: State): void {
    // A batch folded synchronously may be reported before its envelope's ingestion is.
    let mark = this.lastIngested;
    let bytes = 0;
    for (const env of batch) {
      mark = Math.max(mark, env.seq);
      bytes += this.weightOf(env);
    }
    this.applies.push({ mark, batch, bytes });
    this.appliesTotal += bytes;
    this.sinceCheckpoint += bytes;
    this.latest = state;
    const count = this.applyBase + this.applies.length;
    const last = this.checkpoints[this.checkpoints.length - 1] as Checkpoint;
    // Heavy batches take a checkpoint sooner, so the bytes can be trimmed in small steps.
    if (count - last.index >= this.checkpointEvery || this.sinceCheckpoint >= this.maxBytes / 8) {
      this.checkpoints.push({ index: count, mark, state });
      this.sinceCheckpoint = 0;
      this.trim();
    }
  }

  /**
   * Forgets the oldest checkpoint interval while more than `capacity` batches, or more than
   * `maxBytes` of them, are held.
   */
  private trim(): void {
    while (
      (this.applies.length > this.capacity || this.appliesTotal > this.maxBytes) &&
      this.checkpoints.length > 1
    ) {
      this.checkpoints.shift();
      const first = this.checkpoints[0] as Checkpoint;
      const drop = first.index - this.applyBase;
      for (let i = 0; i < drop; i++) this.appliesTotal -= (this.applies[i] as Applied).bytes;
      this.applies = this.applies.slice(drop);
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
