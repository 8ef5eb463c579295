/**
 * Offline replay of an event log: the same reducers, the same merge window, on virtual
 * time. Before each envelope is ingested the clock is advanced to its `at`, so merge-window
 * timers fire exactly where they fired live; the same log always folds to the same states.
 */
import { createReadStream, statSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { freeze } from 'immer';
import type { Envelope, ProxyEvent } from '../../events/index.js';
import { applyInPlace, initialState, mergeWindowMs, type State } from '../../reducers/index.js';
import { Subject, VirtualAction, VirtualTimeScheduler } from '../rx.js';
import { type LogCheckpoint, type LogHeader, type LogLine, parseLogLine } from './log-format.js';
import { mergeWindow } from './merge-window.js';

/** Where to stop: after a sequence number, at a wall-clock instant (ms since the epoch), or at the end. */
export type ReplayTarget = { seq: number } | { time: number } | { end: true };

export interface ReplayOptions {
  target?: ReplayTarget;
  /** Count malformed lines and go on, instead of stopping at the first. */
  skipBadLines?: boolean;
  /** Ignore checkpoint lines and fold every envelope from the start. */
  ignoreCheckpoints?: boolean;
  /** Called now and then with bytes read so far and the file size. */
  onProgress?: (read: number, total: number) => void;
}

export interface ReplayResult {
  state: State;
  /** The header of the run the target lies in (a file appended to by restarts holds several). */
  header: LogHeader | null;
  /** Envelopes folded (after the checkpoint the replay started from, if any). */
  events: number;
  /** Sequence number of the last envelope folded. */
  lastSeq: number;
  badLines: Array<{ line: number; reason: string }>;
  /** A last line without its newline: the writer was interrupted there; it is ignored. */
  truncatedTail: number | null;
  /** The checkpoint the fold started from, when one was used. */
  startedFrom: number | null;
}

/** A malformed line stopped the replay. */
export class ReplayError extends Error {
  constructor(
    readonly line: number,
    readonly reason: string,
    readonly path: string,
  ) {
    super(line > 0 ? `${path}:${line}: ${reason}` : `${path}: ${reason}`);
  }
}

/**
 * The fold of a replay, on virtual time: the same merge window and the same reducer
 * handlers as the live store, but applied in place to a private copy of the state
 * (`applyInPlace`) rather than through immer per event, because a replay only needs the
 * snapshot it was asked for, and millions of events must fold in seconds.
 */
export class Replayer {
  readonly scheduler: VirtualTimeScheduler;
  private readonly input = new Subject<Envelope<ProxyEvent>>();
  private readonly working: State;
  private lastSeq: number;
  private count = 0;
  /**
   * Log line of each envelope the merge window holds. The envelope being ingested, which
   * the window most often passes at once, is `ingesting`, its line `ingestingLine`: a map
   * entry per envelope cost more than applying most of them.
   */
  private readonly lines = new Map<number, number>();
  private ingesting: Envelope<ProxyEvent> | null = null;
  private ingestingLine = 0;
  private delivered = false;
  /** Envelopes whose reducer threw: a log edited by hand or damaged in a way JSON allows. */
  private failures: Array<{ line: number; reason: string }> = [];

  constructor(from?: LogCheckpoint) {
    this.scheduler = new VirtualTimeScheduler(VirtualAction, Number.POSITIVE_INFINITY);
    this.scheduler.frame = from?.at ?? 0;
    this.lastSeq = from?.seq ?? 0;
    this.working = structuredClone(from?.state ?? initialState) as State;
    this.input
      .pipe(mergeWindow((cluster) => mergeWindowMs(this.working, cluster), this.scheduler))
      .subscribe((batch) => {
        for (const env of batch) {
          let line = this.ingestingLine;
          if (env === this.ingesting) this.delivered = true;
          else {
            line = this.lines.get(env.seq) ?? 0;
            this.lines.delete(env.seq);
          }
          try {
            applyInPlace(this.working, env);
          } catch (err) {
            const what = `event ${JSON.stringify(env.event.type)} (seq ${env.seq})`;
            this.failures.push({ line, reason: `${what} cannot be applied: ${(err as Error).message}` });
          }
        }
      });
  }

  /** Runs every merge-window timer due by `time` and leaves the clock there. */
  advanceTo(time: number): void {
    if (time < this.scheduler.frame) return;
    this.scheduler.maxFrames = time;
    this.scheduler.flush();
    this.scheduler.maxFrames = Number.POSITIVE_INFINITY;
    this.scheduler.frame = time;
  }

  ingest(env: Envelope<ProxyEvent>, line = 0): void {
    this.advanceTo(env.at);
    this.ingesting = env;
    this.ingestingLine = line;
    this.delivered = false;
    this.input.next(env);
    if (!this.delivered) this.lines.set(env.seq, line);
    this.ingesting = null;
    this.lastSeq = env.seq;
    this.count += 1;
  }

  /** Delivers whatever the merge window still holds, as a store that is shut down does. */
  finish(): State {
    this.scheduler.flush();
    this.input.complete();
    return this.state;
  }

  /** A frozen copy of the fold so far, shaped exactly like a live snapshot. */
  get state(): State {
    return freeze(structuredClone(this.working), true);
  }

  /** The envelopes that failed to apply since the last call, with their log lines. */
  takeFailures(): Array<{ line: number; reason: string }> {
    const failures = this.failures;
    this.failures = [];
    return failures;
  }

  get seq(): number {
    return this.lastSeq;
  }

  get events(): number {
    return this.count;
  }
}

/** The lines of one read of a log, the first numbered `first`; `torn`: the one text is a last line without its newline. */
export interface LineBatch {
  first: number;
  texts: string[];
  torn: boolean;
}

/**
 * The lines of a file, a read (1 MB) at a time: a replay walks millions of lines, and an
 * async step per line cost more than parsing it.
 */
export async function* logLineBatches(
  path: string,
  onProgress?: (read: number, total: number) => void,
): AsyncGenerator<LineBatch> {
  const total = statSync(path).size;
  const decoder = new StringDecoder('utf8');
  let read = 0;
  let rest = '';
  let line = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
    read += (chunk as Buffer).length;
    onProgress?.(read, total);
    const text = rest + decoder.write(chunk as Buffer);
    const texts: string[] = [];
    let start = 0;
    for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
      texts.push(text.slice(start, nl));
      start = nl + 1;
    }
    rest = text.slice(start);
    if (texts.length > 0) yield { first: line + 1, texts, torn: false };
    line += texts.length;
  }
  rest += decoder.end();
  if (rest !== '') yield { first: line + 1, texts: [rest], torn: true };
}

/**
 * Lines of a file with their 1-based numbers; a last line without a newline is reported
 * separately as a torn write rather than as a line.
 */
export async function* logLines(
  path: string,
  onProgress?: (read: number, total: number) => void,
): AsyncGenerator<{ line: number; text: string; complete: boolean }> {
  for await (const { first, texts, torn } of logLineBatches(path, onProgress)) {
    for (const [i, text] of texts.entries()) yield { line: first + i, text, complete: !torn };
  }
}

/** Folds the log at `path` up to `options.target` (default: the end). */
export async function replayLog(path: string, options: ReplayOptions = {}): Promise<ReplayResult> {
  const target = options.target ?? { end: true };
  const result: ReplayResult = {
    state: initialState,
    header: null,
    events: 0,
    lastSeq: 0,
    badLines: [],
    truncatedTail: null,
    startedFrom: null,
  };
  let replayer = new Replayer();
  let firstSeq: number | null = null;
  let reached = false;
  /** Envelopes folded by replayers a restart replaced. */
  let foldedBefore = 0;
  /**
   * A header after the first starts a new run, unless a checkpoint follows it at once (a
   * rotation reopening the same path): a restarted process began from the initial state.
   */
  let nextRun: LogHeader | null = null;
  const bad = (line: number, reason: string) => {
    if (!options.skipBadLines) throw new ReplayError(line, reason, path);
    result.badLines.push({ line, reason });
  };
  /**
   * A line that does not parse, held until another line follows: the file's last line is
   * torn (a write cut by a full disk or a crash, even one a newline ended), not bad.
   */
  let unparsed: { line: number; reason: string } | null = null;
  lines: for await (const { first, texts, torn } of logLineBatches(path, options.onProgress)) {
    for (let i = 0; i < texts.length; i++) {
      const text = texts[i]!;
      const line = first + i;
      if (torn) {
        result.truncatedTail = unparsed?.line ?? line;
        unparsed = null;
        break lines;
      }
      if (text.trim() === '') continue;
      if (unparsed) bad(unparsed.line, unparsed.reason);
      unparsed = null;
      const parsed: LogLine | string = parseLogLine(text);
      if (typeof parsed === 'string') {
        unparsed = { line, reason: parsed };
        continue;
      }
      if (parsed.kind === 'header') {
        if (result.header === null) result.header = parsed.header;
        else nextRun = parsed.header;
        continue;
      }
      if (parsed.kind === 'checkpoint') {
        if (nextRun) result.header = nextRun;
        nextRun = null;
        const c = parsed.checkpoint;
        // Start over from a checkpoint only while it is still on the way to the target.
        const usable = !options.ignoreCheckpoints && !beyond(target, c.seq, c.at) && c.seq >= replayer.seq;
        if (usable) {
          replayer = new Replayer(c);
          result.startedFrom = c.seq;
          firstSeq ??= c.seq;
        }
        continue;
      }
      const env = parsed.envelope;
      if (env.seq <= replayer.seq) {
        bad(line, `seq ${env.seq} does not follow ${replayer.seq}: lines are out of order or repeated`);
        continue;
      }
      firstSeq ??= env.seq - 1;
      if (nextRun && !beyond(target, env.seq, env.at)) {
        // The earlier run's snapshot is what it was when that run ended; the new one starts afresh.
        result.header = nextRun;
        nextRun = null;
        foldedBefore += replayer.events;
        replayer = new Replayer({ seq: replayer.seq, at: env.at, state: initialState });
      }
      if (beyond(target, env.seq, env.at)) {
        // The live store delivered merge-window timers due before this envelope arrived.
        replayer.advanceTo('time' in target ? target.time : env.at);
        reached = true;
        break lines;
      }
      replayer.ingest(env, line);
      for (const failure of replayer.takeFailures()) bad(failure.line, failure.reason);
    }
  }
  if (unparsed) result.truncatedTail = unparsed.line;
  if ('seq' in target && (firstSeq === null || target.seq < firstSeq)) {
    throw new ReplayError(
      0,
      `seq ${target.seq} is before the start of this log (it starts after seq ${firstSeq ?? 0})`,
      path,
    );
  }
  if ('seq' in target && !reached && target.seq > replayer.seq) {
    throw new ReplayError(
      0,
      `seq ${target.seq} is past the end of this log (the last is ${replayer.seq})`,
      path,
    );
  }
  if (!reached && 'time' in target) replayer.advanceTo(target.time);
  result.state = reached || !('end' in target) ? replayer.state : replayer.finish();
  for (const failure of replayer.takeFailures()) bad(failure.line, failure.reason);
  result.events = foldedBefore + replayer.events;
  result.lastSeq = replayer.seq;
  return result;
}

function beyond(target: ReplayTarget, seq: number, at: number): boolean {
  if ('seq' in target) return seq > target.seq;
  if ('time' in target) return at > target.time;
  return false;
}
