/**
 * The event log: keeps the in-memory history (`ctx.history`, for `?at=` and the
 * `/events` and `/snapshots` endpoints) and, with `--event-log PATH`, records every envelope
 * that enters the store to an ndjson file that `proxy replay` folds back into the same
 * snapshots. See `log-format.ts` for the file layout.
 *
 * Durability: a mutation through the admin is answered only once its events are written
 * (`ctx.eventLog.flush()`), so a process killed with SIGKILL after the answer has them in the file;
 * anything else is written within `--file-flush-interval-msec`, at most one second. Written
 * means handed to the kernel: it survives the process, not the machine (no fsync). When the
 * file refuses a write (a full disk), `flush()` rejects with the error, so the admin answers
 * a 5xx instead of acknowledging; the event stays applied and its line is written when the
 * file takes writes again (docs/event-log.md, "A full disk").
 */
import { truncateSync } from 'node:fs';
import { type Envelope, type JsonObject, mergeWindowOf, type ProxyEvent } from '../../events/index.js';
import { mergeWindowMs, type State } from '../../reducers/index.js';
import type { EventLog } from '../context-core.js';
import { History, type HistoryOptions } from '../control/history.js';
import { checkpointLine, envelopeLine, headerLine, LOG_FORMAT, LOG_VERSION } from '../control/log-format.js';
import { readLogTail } from '../control/log-tail.js';
import { LogWriter } from '../control/log-writer.js';
import type { Core } from '../core.js';
import { VERSION } from '../version.js';

/** Default of `--event-log-checkpoint-every`: a full snapshot line after this many events. */
export const DEFAULT_CHECKPOINT_EVERY = 10_000;
/** Unflushed events wait at most this long, whatever `--file-flush-interval-msec` says. */
export const MAX_FLUSH_INTERVAL_MS = 1000;

const recorders = new Set<Recorder>();

/**
 * Starts recording; `createContext` calls it before any event is dispatched, so the history
 * and the log both begin with the bootstrap event. `bootstrap` goes into the log header so
 * the file is self-contained. An existing log is appended to: this run's sequence numbers go
 * on from its last line, and a line torn by a crash of the earlier run is cut off first.
 */
export function openEventLog(
  core: Core,
  opts: { bootstrap?: JsonObject | null; history: HistoryOptions | false },
): EventLog {
  const path = core.options.eventLog;
  const tail = path ? continueLog(core, path) : null;
  const history =
    opts.history === false
      ? null
      : new History(core.store.state, { ...opts.history, startSeq: tail?.lastSeq ?? opts.history.startSeq });
  let recorder = path ? new Recorder(core, opts.bootstrap ?? null) : null;
  const ingested = core.store.ingested$.subscribe((env) => {
    history?.recordIngested(env);
    recorder?.onIngested(env);
  });
  const applied = core.store.applied$.subscribe(({ batch, state }) => {
    history?.recordApplied(batch, state);
    recorder?.onApplied(batch, state);
  });
  core.onShutdown(async () => {
    ingested.unsubscribe();
    applied.unsubscribe();
    await recorder?.close();
  });
  return {
    history,
    flush: () => recorder?.flush() ?? Promise.resolve(),
    release: () => recorder?.close() ?? Promise.resolve(),
    reopen: () => recorder?.reopen() ?? Promise.resolve(),
    resume: () => {
      if (!recorder?.isClosed) return;
      const lastSeq = continueLog(core, path)?.lastSeq ?? 0;
      recorder = new Recorder(core, opts.bootstrap ?? null);
      recorder.checkpointAfter(Math.max(lastSeq, core.store.state.seq));
    },
  };
}

/**
 * Reads where an existing log ends, cuts off a line torn by a crash of its writer, and makes
 * the store's sequence numbers go on after its last one.
 */
function continueLog(core: Core, path: string): ReturnType<typeof readLogTail> {
  const tail = readLogTail(path);
  if (tail) {
    if (tail.completeBytes < tail.size) {
      truncateSync(path, tail.completeBytes);
      core.log
        .get('main')
        .warn({ path, bytes: tail.size - tail.completeBytes }, 'event log ended in a torn line; cut it off');
    }
    core.store.continueAfter(tail.lastSeq);
  }
  return tail;
}

/**
 * Reopens every event log file (after it was moved away for rotation); the new file opens
 * with a header and a checkpoint so it replays on its own: what SIGUSR1 does. `/reopen_logs`
 * reopens its own context's through `ctx.eventLog.reopen()` and answers its failure; a signal
 * has no one to answer, so a file that cannot be opened (its directory gone) is logged, and
 * the old one is written on.
 */
function reopenOnSignal(): void {
  for (const r of recorders) r.reopen().catch((err: unknown) => r.reopenFailed(err));
}

let signalHooked = false;

function hookSignal(): void {
  if (signalHooked) return;
  signalHooked = true;
  process.on('SIGUSR1', reopenOnSignal);
  // A process.exit() that bypasses ctx.shutdown still gets the buffered tail written.
  process.on('exit', () => {
    for (const r of recorders) r.flushOnExit();
  });
}

/** Writes the ndjson file: envelopes as they are ingested, checkpoints where it is safe. */
class Recorder {
  private readonly writer: LogWriter;
  private readonly timer: NodeJS.Timeout;
  private readonly checkpointEvery: number;
  private ingestedCount = 0;
  private appliedCount = 0;
  private lastSeq = 0;
  private sinceCheckpoint = 0;
  /** Per cluster, when the merge window its last delivery opened closes. */
  private readonly openWindows = new Map<string, number>();
  private closed = false;

  constructor(
    private readonly ctx: Core,
    private readonly bootstrap: JsonObject | null,
  ) {
    const log = ctx.log.get('main');
    const path = ctx.options.eventLog;
    this.writer = new LogWriter(path, {
      onError: (err) =>
        log.error(
          { err, path },
          'event log write failed; its lines are kept and written when the file takes them',
        ),
      onRecovered: () => log.warn({ path }, 'event log writes again; it holds every event'),
      resync: () => {
        log.warn(
          { path },
          'event log gave up the lines it could not write; a header and a checkpoint stand for them',
        );
        this.sinceCheckpoint = 0;
        return (
          this.header() +
          checkpointLine({ seq: this.lastSeq, at: ctx.store.scheduler.now(), state: ctx.store.state })
        );
      },
    });
    this.checkpointEvery = Math.max(1, ctx.options.eventLogCheckpointEvery ?? DEFAULT_CHECKPOINT_EVERY);
    this.writer.append(this.header());
    const interval = Math.min(MAX_FLUSH_INTERVAL_MS, Math.max(1, ctx.options.fileFlushIntervalMsec));
    this.timer = setInterval(() => void this.writer.flush(), interval);
    this.timer.unref();
    recorders.add(this);
    hookSignal();
  }

  private header(): string {
    return headerLine({
      format: LOG_FORMAT,
      version: LOG_VERSION,
      product: VERSION,
      options: JSON.parse(JSON.stringify(this.ctx.options)) as JsonObject,
      bootstrap: this.bootstrap,
      opened_at: new Date().toISOString(),
    });
  }

  onIngested(env: Envelope<ProxyEvent>): void {
    if (this.closed) return;
    this.ingestedCount += 1;
    this.lastSeq = env.seq;
    this.sinceCheckpoint += 1;
    this.writer.append(envelopeLine(env));
    this.maybeCheckpoint();
  }

  onApplied(batch: readonly Envelope<ProxyEvent>[], state: State): void {
    if (this.closed) return;
    this.appliedCount += batch.length;
    const now = this.ctx.store.scheduler.now();
    for (const env of batch) {
      const cluster = mergeWindowOf(env.event)?.cluster;
      if (cluster !== undefined) this.openWindows.set(cluster, now + mergeWindowMs(state, cluster));
    }
    this.maybeCheckpoint();
  }

  /**
   * A checkpoint is only correct where a replay starting from it behaves as the live store
   * did: every ingested envelope folded, and no merge window open (a fresh store has none).
   */
  private maybeCheckpoint(): void {
    if (this.sinceCheckpoint < this.checkpointEvery || this.ingestedCount !== this.appliedCount) return;
    const now = this.ctx.store.scheduler.now();
    for (const [cluster, closesAt] of this.openWindows) {
      if (closesAt > now) return;
      this.openWindows.delete(cluster);
    }
    this.writeCheckpoint();
  }

  private writeCheckpoint(): void {
    this.sinceCheckpoint = 0;
    this.writer.append(
      checkpointLine({ seq: this.lastSeq, at: this.ctx.store.scheduler.now(), state: this.ctx.store.state }),
    );
  }

  reopenFailed(err: unknown): void {
    this.ctx.log
      .get('main')
      .error(
        { err, path: this.ctx.options.eventLog },
        'event log cannot be reopened; the open file is written on',
      );
  }

  async reopen(): Promise<void> {
    if (this.closed) return;
    await this.writer.reopen();
    this.writer.append(this.header());
    this.writeCheckpoint();
    await this.writer.flush();
  }

  async flush(): Promise<void> {
    if (this.closed) return;
    await this.writer.flush();
    const failure = this.writer.failure;
    if (failure)
      throw new Error(`the event log ${this.ctx.options.eventLog} cannot be written: ${failure.message}`);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Writes a checkpoint of the current state numbered `seq` (the file's last so far). */
  checkpointAfter(seq: number): void {
    this.lastSeq = seq;
    this.writeCheckpoint();
  }

  flushOnExit(): void {
    if (!this.closed) this.writer.flushSync();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    recorders.delete(this);
    await this.writer.close();
  }
}
