/**
 * `proxy replay LOG`: folds a recorded event log offline and prints an admin view of the
 * snapshot at a sequence number or an instant, or the semantic change between two points.
 */
import { parseArgs } from 'node:util';
import { semanticDiff } from '../control/diff.js';
import { redactPatch } from '../control/redact.js';
import { ReplayError, type ReplayResult, type ReplayTarget, replayLog } from '../control/replay.js';
import { REPLAY_VIEWS, type ReplayView, renderReplayView } from '../control/replay-views.js';

const USAGE = `usage: proxy replay LOG [--at SEQ|TIME] [--view VIEW] [--format text|json] [--diff-from SEQ|TIME]
                    [--skip-bad-lines] [--ignore-checkpoints]

  LOG                   an event log written with --event-log
  --at SEQ|TIME         the snapshot after sequence number SEQ, or at RFC 3339 TIME
                        (e.g. 2026-11-21T14:02:07Z); default: the end of the log
  --view VIEW           ${REPLAY_VIEWS.join(', ')} (default snapshot: the
                        whole semantic snapshot as JSON)
  --format text|json    for clusters and listeners (default text)
  --diff-from SEQ|TIME  print the semantic JSON Patch from that point to --at instead of a view
  --skip-bad-lines      count malformed lines and go on instead of stopping at the first
  --ignore-checkpoints  fold every event from the start, ignoring checkpoint lines
`;

/** `--at` as a target: digits are a sequence number, anything else must be an RFC 3339 time. */
export function parseTarget(text: string): ReplayTarget | string {
  if (/^\d+$/.test(text)) return { seq: Number(text) };
  const rfc3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
  const time = Date.parse(text);
  if (!rfc3339.test(text) || Number.isNaN(time)) {
    return `'${text}' is neither a sequence number nor an RFC 3339 time like 2026-11-21T14:02:07Z`;
  }
  return { time };
}

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
  try {
    const options = {
      skipBadLines: parsed.skipBadLines,
      ignoreCheckpoints: parsed.ignoreCheckpoints,
      onProgress: bar.onProgress,
    };
    const result = await replayLog(parsed.log, { ...options, target: parsed.target });
    bar.done();
    if (parsed.diffFrom) {
      const from = await replayLog(parsed.log, {
        ...options,
        onProgress: undefined,
        target: parsed.diffFrom,
      });
      await writeFully(
        process.stdout,
        `${JSON.stringify(redactPatch(semanticDiff(from.state, result.state)), null, 1)}\n`,
      );
    } else {
      const out = renderReplayView(parsed.view, parsed.format, result.state, result.header?.options ?? null);
      await writeFully(process.stdout, out.body);
    }
    await writeFully(process.stderr, summary(result));
    return 0;
  } catch (err) {
    bar.done();
    if (err instanceof ReplayError) {
      await writeFully(
        process.stderr,
        err.line > 0
          ? `error: ${err.message}\n(malformed line; --skip-bad-lines counts such lines and goes on)\n`
          : `error: ${err.message}\n`,
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
  }
}

interface ReplayArgs {
  log: string;
  target: ReplayTarget;
  diffFrom: ReplayTarget | null;
  view: ReplayView;
  format: 'text' | 'json';
  skipBadLines: boolean;
  ignoreCheckpoints: boolean;
}

/** The arguments, a request for help, or what is wrong with them (unknown options throw). */
function parseReplayArgs(argv: string[]): ReplayArgs | { help: true } | { error: string } {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      at: { type: 'string' },
      view: { type: 'string', default: 'snapshot' },
      format: { type: 'string', default: 'text' },
      'diff-from': { type: 'string' },
      'skip-bad-lines': { type: 'boolean', default: false },
      'ignore-checkpoints': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) return { help: true };
  if (positionals.length !== 1) return { error: 'give exactly one event log file' };
  const view = values.view as ReplayView;
  if (!REPLAY_VIEWS.includes(view))
    return { error: `unknown view '${values.view}' (--view takes ${REPLAY_VIEWS.join(', ')})` };
  if (values.format !== 'text' && values.format !== 'json') {
    return { error: `unknown format '${values.format}' (--format takes text or json)` };
  }
  const target = values.at === undefined ? { end: true as const } : parseTarget(values.at);
  if (typeof target === 'string') return { error: `--at: ${target}` };
  const diffFrom = values['diff-from'] === undefined ? null : parseTarget(values['diff-from']);
  if (typeof diffFrom === 'string') return { error: `--diff-from: ${diffFrom}` };
  return {
    log: positionals[0] as string,
    target,
    diffFrom,
    view,
    format: values.format,
    skipBadLines: values['skip-bad-lines'],
    ignoreCheckpoints: values['ignore-checkpoints'],
  };
}
