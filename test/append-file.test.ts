/**
 * The writer under access logs and `--log-path`, against a FIFO and a full disk. Root causes:
 * the files were opened with a blocking write-only `open(2)`, which on a FIFO with no reader
 * waits for one, so the whole thread (and with it the process, SIGTERM included) stopped before
 * serving; and `--log-path`'s flush let a write's ENOSPC escape its timer, which ended the
 * process.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { AppendFile, MAX_PENDING_BYTES } from '../src/append-file.js';
import { readFifo } from './helpers/fifo.js';
import { mountTinyFs } from './helpers/tiny-fs.js';

const dir = mkdtempSync(join(tmpdir(), 'append-file-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `fn` with stderr's writes captured. */
function stderrOf(fn: () => void): string {
  const write = process.stderr.write;
  let said = '';
  process.stderr.write = ((chunk: string) => {
    said += chunk;
    return true;
  }) as typeof process.stderr.write;
  try {
    fn();
  } finally {
    process.stderr.write = write;
  }
  return said;
}

test('a FIFO with no reader opens at once; its lines wait in the pipe for a reader', async () => {
  const fifo = join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  const file = new AppendFile(fifo, 'access log');
  file.write('one\ntwo\n');
  const read = readFifo(fifo, 1000);
  await new Promise((r) => setTimeout(r, 200));
  file.write('three\n');
  file.close();
  assert.equal(await read, 'one\ntwo\nthree\n');
});

test('a FIFO nobody reads takes 64 KiB, then 1 MiB waits and the rest is dropped, never blocking', async () => {
  const fifo = join(dir, 'full-fifo');
  execFileSync('mkfifo', [fifo]);
  const file = new AppendFile(fifo, 'access log');
  const line = `${'x'.repeat(1023)}\n`;
  const said = stderrOf(() => {
    for (let i = 0; i < 2048; i++) file.write(line);
  });
  assert.match(said, /^access log '.*full-fifo': more than 1 MiB is waiting: dropping lines; /);
  assert.equal(said.split('\n').length, 2, 'said once');
  const read = readFifo(fifo, 3000);
  // The reader empties the pipe as the waiting lines go out, a pipe's worth at each write.
  let recovered = '';
  for (let i = 0; i < 200 && !recovered; i++) {
    await new Promise((r) => setTimeout(r, 10));
    recovered = stderrOf(() => file.write(''));
  }
  file.write('last\n');
  for (let i = 0; i < 20; i++) {
    await new Promise((r) => setTimeout(r, 10));
    file.write('');
  }
  file.close();
  const got = await read;
  assert.ok(got.startsWith(line.repeat(64)), 'the lines in order');
  assert.ok(
    got.length > MAX_PENDING_BYTES && got.length < MAX_PENDING_BYTES + 128 * 1024,
    `${got.length} bytes`,
  );
  assert.ok(
    got.endsWith('last\n'),
    `${got.length} ${JSON.stringify(recovered)} ${JSON.stringify(got.slice(-20))}`,
  );
  assert.match(recovered, /: writing again; \d+ bytes of lines were dropped\n$/);
});

test('a full disk: no throw, the failure said once, the lines written once space is freed', (t) => {
  const fs = mountTinyFs();
  if (typeof fs === 'string') {
    t.skip(fs);
    return;
  }
  try {
    const path = join(fs.dir, 'proxy.log');
    const file = new AppendFile(path, 'log file');
    file.write('before\n');
    fs.fill();
    const said = stderrOf(() => {
      // Past the page the first line took, which holds a few more bytes on a full disk.
      for (let i = 0; i < 100; i++) file.write(`full ${i} ${'y'.repeat(100)}\n`);
    });
    assert.match(said, /^log file '.*proxy.log': cannot write: ENOSPC: no space left on device, write; /);
    assert.equal(said.split('\n').length, 2, 'said once');
    fs.free();
    const recovered = stderrOf(() => file.write('after\n'));
    file.close();
    const lines = readFileSync(path, 'utf8').split('\n');
    assert.equal(lines[0], 'before');
    assert.deepEqual(
      lines.slice(1, -2),
      Array.from({ length: 100 }, (_, i) => `full ${i} ${'y'.repeat(100)}`),
    );
    assert.deepEqual(lines.slice(-2), ['after', '']);
    assert.equal(recovered, `log file '${path}': writing again\n`);
  } finally {
    fs.unmount();
  }
});
