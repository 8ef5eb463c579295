/**
 * The event-log writer on a full disk (issue 25, item 6). Root cause: a write that failed
 * (ENOSPC) dropped its lines, and the part of them the kernel did take stayed in the file as
 * a torn line that the next write was glued to, so the file no longer replayed. Now the file
 * is cut back to its last whole line, the lines are kept and written first once the disk
 * takes writes again, and `failure` says meanwhile that the file is behind.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
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
