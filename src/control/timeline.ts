/**
 * The envelopes of a recorded event log, for timelines: read line by line (headers and
 * checkpoints skipped) without folding anything, or folded for the change each one made.
 */
import type { Envelope, ProxyEvent } from '../../events/index.js';
import { initialState, type State } from '../../reducers/index.js';
import { parseLogLine } from './log-format.js';
import { logLines, ReplayError, Replayer } from './replay.js';

export interface LogScan {
  envelopes: Envelope<ProxyEvent>[];
  /** `at` of the first and last envelope of the whole log (0 when it holds none). */
  firstAt: number;
  lastAt: number;
  /** Sequence numbers of the first and last envelope of the whole log. */
  firstSeq: number;
  lastSeq: number;
  badLines: Array<{ line: number; reason: string }>;
}

/**
 * Every envelope of the log at `path` that `keep` accepts, with the time span of the whole
 * log (relative times are read against its end). A malformed line throws a `ReplayError`
 * unless `skipBadLines`; a torn last line is ignored, as the replay ignores it.
 */
export async function scanLog(
  path: string,
  keep: (env: Envelope<ProxyEvent>) => boolean,
  options: { skipBadLines?: boolean } = {},
): Promise<LogScan> {
  const scan: LogScan = { envelopes: [], firstAt: 0, lastAt: 0, firstSeq: 0, lastSeq: 0, badLines: [] };
  for await (const { line, text, complete } of logLines(path)) {
    if (!complete || text.trim() === '') continue;
    const parsed = parseLogLine(text);
    if (typeof parsed === 'string') {
      if (!options.skipBadLines) throw new ReplayError(line, parsed, path);
      scan.badLines.push({ line, reason: parsed });
      continue;
    }
    if (parsed.kind !== 'envelope') continue;
    const env = parsed.envelope;
    if (scan.firstSeq === 0) {
      scan.firstAt = env.at;
      scan.firstSeq = env.seq;
    }
    scan.lastAt = Math.max(scan.lastAt, env.at);
    scan.lastSeq = env.seq;
    if (keep(env)) scan.envelopes.push(env);
  }
  return scan;
}

/**
 * Folds the log at `path` as a replay does and calls `onEvent` for each envelope `wanted`
 * accepts with the snapshot right before it entered and right after, up to the next one
 * (merge-window deliveries in between included): what `/snapshots/diff?from=SEQ-1&to=SEQ`
 * answers live, for a timeline that shows each event's JSON Patch offline. Each restart in
 * the file folds from the initial state.
 */
export async function foldEvents(
  path: string,
  wanted: (env: Envelope<ProxyEvent>) => boolean,
  onEvent: (env: Envelope<ProxyEvent>, before: State, after: State) => void,
  options: { skipBadLines?: boolean } = {},
): Promise<void> {
  let replayer = new Replayer();
  let started = false;
  /** A header after the first: a restart, unless a checkpoint follows it at once (a rotation). */
  let restart = false;
  let headers = 0;
  /** A wanted envelope whose "after" is the state just before the next one enters. */
  let pending: { env: Envelope<ProxyEvent>; before: State } | null = null;
  for await (const { line, text, complete } of logLines(path)) {
    if (!complete || text.trim() === '') continue;
    const parsed = parseLogLine(text);
    if (typeof parsed === 'string') {
      if (!options.skipBadLines) throw new ReplayError(line, parsed, path);
      continue;
    }
    if (parsed.kind === 'header') {
      headers += 1;
      restart = headers > 1;
      continue;
    }
    if (parsed.kind === 'checkpoint') {
      if (!started) replayer = new Replayer(parsed.checkpoint);
      restart = false;
      continue;
    }
    const env = parsed.envelope;
    if (env.seq <= replayer.seq) continue;
    // Deliveries due before this envelope arrived belong to the one before it.
    replayer.advanceTo(env.at);
    if (pending) onEvent(pending.env, pending.before, replayer.state);
    pending = null;
    if (restart) replayer = new Replayer({ seq: replayer.seq, at: env.at, state: initialState });
    restart = false;
    started = true;
    if (wanted(env)) pending = { env, before: replayer.state };
    replayer.ingest(env, line);
  }
  if (pending) onEvent(pending.env, pending.before, replayer.finish());
}
