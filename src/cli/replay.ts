/**
 * `proxy replay LOG`: folds a recorded event log offline and prints an admin view of the
 * snapshot at a sequence number or an instant, or the semantic change between two points.
 */
import { describeFilter, type EventFilter, matchesFilter, NO_FILTER } from '../../views/events/filter.js';
import { renderDiffReport } from '../../views/events/patch-summary.js';
import { parseTimePoint, type TimePoint } from '../../views/events/time.js';
import { renderTimelineJson, renderTimelineText } from '../../views/events/timeline.js';
import { renderTimelinePage, type TimelineRow } from '../../views/events/timeline-html.js';
import { redactAt, redactPatch } from '../../views/redact.js';
import { semanticDiff, valueAt } from '../../views/snapshot-diff.js';
import { extractBundleLog, isBundle } from '../control/bundle-file.js';
import { ReplayError, type ReplayResult, replayLog } from '../control/replay.js';
import { type ReplayInput, replayInput } from '../control/replay-input.js';
import { foldEvents, type LogScan, scanLog } from '../control/timeline.js';
import { parseReplayArgs, type ReplayArgs, USAGE } from './replay-args.js';
import { renderReplayView } from './replay-views.js';

/** Draws a progress bar on stderr when it is a terminal; returns the callback and a cleanup. */
function progressBar(): { onProgress?: (read: number, total: number) => void; done(): void } {
  if (!process.stderr.isTTY) return { done() {} };
  let last = 0;
  return {
    onProgress(read, total) {
      const now = Date.now();
      if (now - last < 100 && read < total) return;
      last = now;
      const share = total > 0 ? read / total : 1;
      const width = 40;
      const filled = Math.round(share * width);
      process.stderr.write(
        `\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${Math.floor(share * 100)}%`,
      );
    },
    done: () => process.stderr.write('\r\x1b[K'),
  };
}

function summary(result: ReplayResult): string {
  const parts = [`replayed ${result.events} events up to seq ${result.lastSeq}`];
  if (result.startedFrom !== null) parts.push(`from the checkpoint at seq ${result.startedFrom}`);
  if (result.badLines.length > 0) {
    const first = result.badLines[0]!;
    parts.push(
      `skipped ${result.badLines.length} malformed lines (first: line ${first.line}: ${first.reason})`,
    );
  }
  if (result.truncatedTail !== null) {
    parts.push(`ignored the incomplete last line ${result.truncatedTail} (the writer was interrupted)`);
  }
  return `${parts.join('; ')}\n`;
}

/**
 * Writes `text` and resolves once the stream has handed it all to the kernel. A pipe is
 * written asynchronously, so exiting before that cuts the output at 64 KiB. A reader that
 * went away (EPIPE) ends the wait too: nothing more can reach it.
 */
function writeFully(stream: NodeJS.WritableStream, text: string | Uint8Array): Promise<void> {
  return new Promise((resolve) => stream.write(text, () => resolve()));
}

/** A reader that went away (`| head`) is no failure of the replay; anything else still is. */
function onStdoutError(err: NodeJS.ErrnoException): void {
  if (err.code !== 'EPIPE') throw err;
}

/** Runs `proxy replay`; resolves to the exit code once everything printed is written out. */
export async function runReplay(argv: string[]): Promise<number> {
  if (!process.stdout.listeners('error').includes(onStdoutError)) process.stdout.on('error', onStdoutError);
  let parsed: ReplayArgs | { help: true } | { error: string };
  try {
    parsed = parseReplayArgs(argv);
  } catch (err) {
    parsed = { error: (err as Error).message };
  }
  if ('help' in parsed) {
    await writeFully(process.stdout, USAGE);
    return 0;
  }
  if ('error' in parsed) {
    await writeFully(process.stderr, `error: ${parsed.error}\n${USAGE}`);
    return 1;
  }
  const bar = progressBar();
  let bundle: { path: string; remove(): void } | null = null;
  let input: ReplayInput | null = null;
  try {
    const opened = await replayInput(parsed.log);
    if (typeof opened === 'string') {
      await writeFully(process.stderr, `error: ${opened}\n`);
      return 1;
    }
    input = opened;
    if (isBundle(input.path)) {
      const extracted = extractBundleLog(input.path);
      if (typeof extracted === 'string') {
        await writeFully(process.stderr, `error: ${extracted.replace(input.path, parsed.log)}\n`);
        return 1;
      }
      bundle = extracted;
    }
    const log = bundle?.path ?? input.path;
    const point = await pointReader(log, parsed);
    if (parsed.timeline) {
      bar.done();
      return await timeline(log, parsed, point);
    }
    if (parsed.diff) {
      bar.done();
      return await diffReport(
        log,
        parsed,
        point(parsed.diff.from),
        parsed.diff.to ? point(parsed.diff.to) : null,
      );
    }
    const options = {
      skipBadLines: parsed.skipBadLines,
      ignoreCheckpoints: parsed.ignoreCheckpoints,
      onProgress: bar.onProgress,
    };
    const target = parsed.at === null ? { end: true as const } : point(parsed.at);
    const result = await replayLog(log, { ...options, target });
    bar.done();
    if (parsed.diffFrom !== null) {
      const from = await replayLog(log, {
        ...options,
        onProgress: undefined,
        target: point(parsed.diffFrom),
      });
      await writeFully(
        process.stdout,
        `${JSON.stringify(redactPatch(semanticDiff(from.state, result.state)), null, 1)}\n`,
      );
    } else {
      // html is refused without --timeline.
      const format = parsed.format === 'json' ? 'json' : 'text';
      const out = renderReplayView(parsed.view, format, result.state, result.header?.options ?? null);
      await writeFully(process.stdout, out.body);
    }
    await writeFully(process.stderr, summary(result));
    return 0;
  } catch (err) {
    bar.done();
    if (err instanceof ReplayError) {
      // A bundle's log, and a piped log, are replayed from a temporary copy: name what was given.
      const message = bundle
        ? err.message.replace(bundle.path, `${parsed.log} (its event log)`)
        : err.message.replace(input?.path ?? parsed.log, parsed.log);
      await writeFully(
        process.stderr,
        err.line > 0
          ? `error: ${message}\n(malformed line; --skip-bad-lines counts such lines and goes on)\n`
          : `error: ${message}\n`,
      );
      return 1;
    }
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR') {
      await writeFully(
        process.stderr,
        `error: cannot read event log '${parsed.log}': ${(err as Error).message}\n`,
      );
      return 1;
    }
    throw err;
  } finally {
    bundle?.remove();
    input?.remove();
  }
}

/**
 * Reads points as people write them. Times ago and times of day count from the log's last
 * event (an incident is read after the fact), so the log is scanned once for its end, and
 * only when some point needs it.
 */
async function pointReader(log: string, args: ReplayArgs): Promise<(text: string) => TimePoint> {
  const written = [args.at, args.diffFrom, args.since, args.until, args.diff?.from, args.diff?.to];
  const needsEnd = written.some((text) => {
    if (!text) return false;
    const probe = parseTimePoint(text, Number.NaN);
    return typeof probe !== 'string' && 'time' in probe && Number.isNaN(probe.time);
  });
  const end = needsEnd ? (await scanLog(log, () => false, { skipBadLines: true })).lastAt : 0;
  return (text) => parseTimePoint(text, end) as TimePoint;
}

async function timeline(log: string, args: ReplayArgs, point: (text: string) => TimePoint): Promise<number> {
  const filter: EventFilter = {
    types: args.types,
    sources: args.sources,
    clusters: args.clusters,
    listeners: args.listeners,
    hosts: args.hosts,
    since: args.since === null ? null : point(args.since),
    until: args.until === null ? null : point(args.until),
  };
  let total = 0;
  const scan = await scanLog(
    log,
    (env) => {
      total += 1;
      return matchesFilter(env, filter);
    },
    { skipBadLines: args.skipBadLines },
  );
  const which = describeFilter(filter);
  const out =
    args.format === 'html'
      ? await timelineHtml(log, args, scan, which)
      : args.format === 'json'
        ? renderTimelineJson(scan.envelopes)
        : renderTimelineText(scan.envelopes);
  await writeFully(process.stdout, out);
  const skipped = scan.badLines.length > 0 ? `; skipped ${scan.badLines.length} malformed lines` : '';
  await writeFully(
    process.stderr,
    `listed ${scan.envelopes.length} of ${total} events${which ? ` (${which})` : ''}${skipped}\n`,
  );
  return 0;
}

/** Rows an HTML timeline written offline holds at most: the latest matching events. */
const HTML_ROWS = 2000;

/** The admin's timeline page for a recorded log: each event with the change it made, folded from the log. */
async function timelineHtml(log: string, args: ReplayArgs, scan: LogScan, filter: string): Promise<string> {
  const shown = scan.envelopes.slice(-HTML_ROWS);
  const wanted = new Set(shown.map((env) => env.seq));
  const rows: TimelineRow[] = [];
  await foldEvents(
    log,
    (env) => wanted.has(env.seq),
    (env, before, after) => rows.push({ env, patch: redactPatch(semanticDiff(before, after)) }),
    { skipBadLines: args.skipBadLines },
  );
  const page = renderTimelinePage({
    rows,
    matched: scan.envelopes.length,
    oldestSeq: scan.firstSeq,
    latestSeq: scan.lastSeq,
    query: new URLSearchParams(),
    views: [],
    types: [],
    live: false,
    followUrl: '',
    now: scan.lastAt,
    offline: { log: args.log, filter },
  });
  return String(page.body);
}

async function diffReport(
  log: string,
  args: ReplayArgs,
  from: TimePoint,
  to: TimePoint | null,
): Promise<number> {
  const options = { skipBadLines: args.skipBadLines, ignoreCheckpoints: args.ignoreCheckpoints };
  const before = await replayLog(log, { ...options, target: from });
  const after = await replayLog(log, { ...options, target: to ?? { end: true } });
  const between = { ...NO_FILTER, since: { seq: before.lastSeq }, until: { seq: after.lastSeq } };
  const scan = await scanLog(log, (env) => matchesFilter(env, between), options);
  const out = renderDiffReport(
    {
      from: { seq: before.lastSeq, at: before.state.at },
      to: { seq: after.lastSeq, at: after.state.at },
      events: scan.envelopes,
      patch: redactPatch(semanticDiff(before.state, after.state)),
      before: (tokens) => redactAt(tokens, valueAt(before.state, tokens)),
    },
    args.format === 'json' ? 'json' : 'text',
  );
  await writeFully(process.stdout, out);
  await writeFully(process.stderr, summary(after));
  return 0;
}
