/**
 * Root cause: the event log was opened with a blocking `open` and narrowed to 0600 with
 * `fchmod` whatever it was. `--event-log` naming a FIFO blocked the process before it started,
 * silent for ever (the open waits for a writer), and a link to `/dev/null` made the machine's
 * `/dev/null` mode 0600, which every unprivileged program then failed to write. Now the file is
 * opened non-blocking and anything but a regular file is refused, naming what it is.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  constants,
  mkdirSync,
  openSync,
  mkdtempSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { openLogFile, openPrivate } from '../../src/control/log-file.js';

const dir = mkdtempSync(join(tmpdir(), 'log-file-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const mode = (path: string) => statSync(path).mode & 0o777;

test('a FIFO is refused at once, for reading and for appending, whether a reader is there or not', () => {
  const fifo = join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  for (const how of ['read', 'append'] as const) {
    assert.throws(() => openLogFile(fifo, how), {
      message: `event log ${fifo} is a FIFO, not a regular file`,
    });
  }
  const link = join(dir, 'to-fifo');
  symlinkSync(fifo, link);
  assert.throws(() => openPrivate(link), { message: `event log ${link} is a FIFO, not a regular file` });
  // With a reader holding it open, the non-blocking open for writing succeeds; fstat tells.
  const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    assert.throws(() => openPrivate(fifo), { message: `event log ${fifo} is a FIFO, not a regular file` });
  } finally {
    closeSync(reader);
  }
});

test('a device is refused and keeps its mode (a node like /dev/null, made here)', (t) => {
  const device = join(dir, 'null');
  try {
    execFileSync('mknod', [device, 'c', '1', '3']);
  } catch {
    t.skip('mknod needs root');
    return;
  }
  chmodSync(device, 0o666);
  const link = join(dir, 'to-null');
  symlinkSync(device, link);
  for (const path of [device, link]) {
    assert.throws(() => openPrivate(path), { message: `event log ${path} is a device, not a regular file` });
    assert.throws(() => openLogFile(path, 'read'), /is a device, not a regular file/);
  }
  assert.equal(mode(device), 0o666, 'its mode is unchanged');
});

test('a directory is refused naming it', () => {
  const sub = join(dir, 'sub');
  mkdirSync(sub);
  assert.throws(() => openLogFile(sub, 'read'), {
    message: `event log ${sub} is a directory, not a regular file`,
  });
  assert.throws(() => openPrivate(sub), /EISDIR/);
});

test('a regular file opens, created 0600 or narrowed to it', () => {
  const created = join(dir, 'new.ndjson');
  closeSync(openPrivate(created));
  assert.equal(mode(created), 0o600);
  const existing = join(dir, 'old.ndjson');
  writeFileSync(existing, '', { mode: 0o644 });
  closeSync(openPrivate(existing));
  assert.equal(mode(existing), 0o600);
  closeSync(openLogFile(existing, 'read'));
});
