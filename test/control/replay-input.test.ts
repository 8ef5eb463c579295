/**
 * Root cause: `proxy replay` read its log with positional reads and several times over, which a
 * pipe allows neither of: `proxy replay <(zcat events.ndjson.gz)` and `... | proxy replay
 * /dev/stdin` died with ESPIPE and a stack trace; and `/dev/zero` was read for ever, one line
 * growing without end. A pipe is now copied to a private temporary file first, and a device
 * or a directory is refused naming what it is.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { type ProxyRun, repoRoot, runProxy } from '../helpers/cli.js';

const FIXTURE = join(repoRoot, 'fixtures/runtime-changes/events.ndjson');

const dir = mkdtempSync(join(tmpdir(), 'replay-input-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let fifos = 0;

/** `proxy replay FIFO ARGS` with `input` written into the FIFO, as a shell's `<(...)` hands it. */
async function replayPiped(args: string[], input: string): Promise<ProxyRun> {
  const fifo = join(dir, `log-${fifos++}.fifo`);
  execFileSync('mkfifo', [fifo]);
  const writer = createWriteStream(fifo);
  writer.on('error', () => {});
  writer.end(input);
  const run = await runProxy(['replay', fifo, ...args], {}, 30_000);
  return { ...run, stderr: run.stderr.replaceAll(fifo, 'FIFO') };
}

test('a log through a pipe replays as the file does, a second pass (--diff-from) included', async () => {
  const text = readFileSync(FIXTURE, 'utf8');
  for (const args of [
    ['--view', 'runtime'],
    ['--diff-from', '2'],
  ]) {
    const file = await runProxy(['replay', FIXTURE, ...args]);
    assert.equal(file.code, 0, file.stderr);
    const piped = await replayPiped(args, text);
    assert.equal(piped.code, 0, piped.stderr);
    assert.equal(piped.stdout, file.stdout);
  }
});

test('a malformed piped log is named as given, not as its copy', async () => {
  // Not last: a bad last line is taken for one a crash cut short.
  const text = readFileSync(FIXTURE, 'utf8');
  const piped = await replayPiped([], `${text}{"seq":"x"}\n${text.trimEnd().split('\n').at(-1)}\n`);
  assert.equal(piped.code, 1);
  assert.match(piped.stderr, /^error: FIFO:\d+: /m);
});

test('a device or a directory is refused at once, naming it', async () => {
  for (const [path, kind] of [
    ['/dev/zero', 'a device'],
    [repoRoot, 'a directory'],
  ] as const) {
    const run = await runProxy(['replay', path], {}, 30_000);
    assert.equal(run.code, 1, run.stderr);
    assert.ok(run.stderr.includes(`error: ${path} is ${kind}, not an event log`), run.stderr);
  }
});
