/**
 * The SIGUSR1 hook of the access log files is an edge (src/edges/signals.ts), started with the
 * others: on a real SIGUSR1 it reopens a renamed file, and its unhook removes it.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { flushAccessLogsAtExit, openAccessLogFile } from '../../src/dataplane/access-log/file-sink.js';
import { reopenAccessLogsOnSignal } from '../../src/edges/signals.js';

const dir = mkdtempSync(join(tmpdir(), 'signals-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('a started signal hook reopens on a real SIGUSR1; the unhook removes it', async () => {
  const path = join(dir, 'rotated.log');
  const file = openAccessLogFile(path, 3_600_000);
  const listeners = process.listenerCount('SIGUSR1');
  const unhook = reopenAccessLogsOnSignal();
  const unhookExit = flushAccessLogsAtExit();
  try {
    assert.equal(process.listenerCount('SIGUSR1'), listeners + 1);
    file.write('before\n');
    renameSync(path, `${path}.1`);
    const heard = new Promise<void>((resolve) => process.once('SIGUSR1', () => resolve()));
    process.kill(process.pid, 'SIGUSR1');
    await heard;
    file.write('after\n');
    file.flush();
    assert.equal(readFileSync(`${path}.1`, 'utf8'), 'before\n');
    assert.equal(readFileSync(path, 'utf8'), 'after\n');
  } finally {
    unhook();
    unhookExit();
    file.release();
  }
  assert.equal(process.listenerCount('SIGUSR1'), listeners);
  assert.ok(existsSync(path));
});
