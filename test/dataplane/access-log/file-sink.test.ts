/**
 * Root cause: the module hooked SIGUSR1 and the process's exit when imported, so any import (a
 * test, the admin, a worker thread) changed how the process answers a signal. The hooks are
 * now started by the edges; these tests hold that importing hooks nothing and that the started
 * exit hook flushes (the SIGUSR1 hook's own test is test/edges/signals.test.ts).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { pathToFileURL } from 'node:url';

const dir = mkdtempSync(join(tmpdir(), 'file-sink-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** The module as this test runs it: the source under tsx, the build under `npm test`. */
const EXT = import.meta.url.endsWith('.ts') ? 'ts' : 'js';
const MODULE = pathToFileURL(
  join(import.meta.dirname, `../../../src/dataplane/access-log/file-sink.${EXT}`),
).href;

/** Runs `code` (an ES module body) in a fresh Node process with tsx; returns its stdout. */
function child(code: string): string {
  const out = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.equal(out.status, 0, out.stderr);
  return out.stdout;
}

test('importing the file sink hooks neither SIGUSR1 nor the exit', () => {
  const counts = child(`
    const before = [process.listenerCount('SIGUSR1'), process.listenerCount('exit')];
    await import(${JSON.stringify(MODULE)});
    console.log(JSON.stringify({ before, after: [process.listenerCount('SIGUSR1'), process.listenerCount('exit')] }));
  `);
  const { before, after: later } = JSON.parse(counts) as { before: number[]; after: number[] };
  assert.deepEqual(later, before);
});

test('a started exit hook writes the buffered lines when the process exits', () => {
  const path = join(dir, 'exit.log');
  child(`
    const sink = await import(${JSON.stringify(MODULE)});
    sink.flushAccessLogsAtExit();
    sink.openAccessLogFile(${JSON.stringify(path)}, 3_600_000).write('buffered\\n');
    process.exit(0);
  `);
  assert.equal(readFileSync(path, 'utf8'), 'buffered\n');
});
