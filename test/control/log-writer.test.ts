/**
 * The event-log writer on a full disk (issue 25, item 6). Root cause: a write that failed
 * (ENOSPC) dropped its lines, and the part of them the kernel did take stayed in the file as
 * a torn line that the next write was glued to, so the file no longer replayed. Now the file
 * is cut back to its last whole line, the lines are kept and written first once the disk
 * takes writes again, and `failure` says meanwhile that the file is behind.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { LogWriter } from '../../src/control/log-writer.js';
import { mountTinyFs } from '../helpers/tiny-fs.js';

const tiny = mountTinyFs('64k');
after(() => {
  if (typeof tiny !== 'string') tiny.unmount();
});

describe('LogWriter on a full tmpfs', { skip: typeof tiny === 'string' ? tiny : false }, () => {
  it('never leaves a torn line, keeps what it could not write, and writes it in order once there is room', async () => {
    if (typeof tiny === 'string') return;
    const path = join(tiny.dir, 'events.ndjson');
    const errors: Error[] = [];
    let recovered = 0;
    const writer = new LogWriter(path, {
      onError: (err) => errors.push(err),
      onRecovered: () => recovered++,
      resync: () => '{"resync":true}\n',
    });
    const line = (i: number) => `${JSON.stringify({ seq: i, pad: 'p'.repeat(300) })}\n`;
    writer.append(line(1));
    await writer.flush();
    tiny.fill();
    let failedAt = 0;
    for (let i = 2; i <= 40; i++) {
      writer.append(line(i));
      await writer.flush();
      if (writer.failure && !failedAt) failedAt = i;
      const text = readFileSync(path, 'utf8');
      assert.ok(text.endsWith('\n'), `after line ${i} the file ends with a whole line`);
    }
    assert.ok(failedAt > 0, 'the disk filled up');
    assert.equal(errors.length, 1, 'one report per failure streak');
    assert.equal((errors[0] as NodeJS.ErrnoException).code, 'ENOSPC');
    tiny.free();
    writer.append(line(41));
    await writer.flush();
    assert.equal(writer.failure, null);
    assert.equal(recovered, 1);
    await writer.close();
    const seqs = readFileSync(path, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => (JSON.parse(l) as { seq: number }).seq);
    assert.deepEqual(
      seqs,
      Array.from({ length: 41 }, (_, i) => i + 1),
      'every line, once, in order',
    );
  });
});

/**
 * Root cause: `reopen` waited for the write in flight, then closed the file; a write started
 * while that wait settled (an append past the flush size, an admin mutation's flush, a second
 * `/reopen_logs`) still held the old descriptor and failed with EBADF (26 rounds of 100 here),
 * logged as an event-log write error; were the number reused meanwhile, by an accepted
 * connection say, its lines would have gone there. Now the swap waits until no write is in
 * flight.
 */
describe('LogWriter reopened while a write starts', () => {
  it('never writes on the descriptor it closed: no error, every line once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'log-writer-reopen-'));
    try {
      const path = join(dir, 'events.ndjson');
      const errors: Error[] = [];
      const writer = new LogWriter(path, {
        onError: (err) => errors.push(err),
        onRecovered: () => {},
        resync: () => '{"resync":true}\n',
      });
      let n = 0;
      const line = () => `${JSON.stringify({ seq: ++n, pad: 'p'.repeat(2000) })}\n`;
      const rounds = 100;
      for (let round = 0; round < rounds; round++) {
        writer.append(line());
        const first = writer.flush();
        renameSync(path, `${path}.${round}`);
        const reopened = writer.reopen();
        // Between the flush reopen waits for and its swap of the file: another write.
        void first.then(() => {
          writer.append(line());
          void writer.flush();
        });
        await reopened;
        await writer.flush();
      }
      await writer.close();
      assert.deepEqual(
        errors.map((e) => e.message),
        [],
      );
      const files = [...Array.from({ length: rounds }, (_, r) => `${path}.${r}`), path];
      const seqs = files
        .flatMap((f) => readFileSync(f, 'utf8').split('\n').filter(Boolean))
        .map((l) => (JSON.parse(l) as { seq: number }).seq)
        .sort((a, b) => a - b);
      assert.deepEqual(
        seqs,
        Array.from({ length: n }, (_, i) => i + 1),
        'every line, once',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
