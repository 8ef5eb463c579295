/**
 * The envelopes of a recorded event log, for timelines: read line by line (headers and
 * checkpoints skipped), without folding anything.
 */
import type { Envelope, ProxyEvent } from '../../events/index.js';
import { parseLogLine } from './log-format.js';
import { logLines, ReplayError } from './replay.js';

export interface LogScan {
  envelopes: Envelope<ProxyEvent>[];
  /** `at` of the first and last envelope of the whole log (0 when it holds none). */
  firstAt: number;
  lastAt: number;
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
  const scan: LogScan = { envelopes: [], firstAt: 0, lastAt: 0, lastSeq: 0, badLines: [] };
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
    if (scan.firstAt === 0) scan.firstAt = env.at;
    scan.lastAt = Math.max(scan.lastAt, env.at);
    scan.lastSeq = env.seq;
    if (keep(env)) scan.envelopes.push(env);
  }
  return scan;
}
