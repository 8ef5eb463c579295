/**
 * The health check and outlier event logs (`event_log_path`) on a full disk and as FIFOs.
 * Root cause: each was a Node write stream, and one ENOSPC errored the stream: the log wrote no
 * more lines for the life of the process, though the disk had room again a moment later. They
 * are written as access logs are now, which a FIFO nobody reads does not block either.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { JsonLinesLog } from '../../../src/edges/health/event-log.js';
import { readFifo } from '../../helpers/fifo.js';
import { mountTinyFs } from '../../helpers/tiny-fs.js';

const dir = mkdtempSync(join(tmpdir(), 'health-event-log-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('lines refused by a full disk are written once it has room again, the failure said once', (t) => {
  const fs = mountTinyFs();
  if (typeof fs === 'string') {
    t.skip(fs);
    return;
  }
  try {
    const path = join(fs.dir, 'hc.log');
    const said: string[] = [];
    const log = new JsonLinesLog(path, (m) => said.push(m));
    log.write({ n: 0 });
    fs.fill();
    for (let n = 1; n <= 60; n++) log.write({ n, pad: 'x'.repeat(100) });
    assert.equal(said.length, 1);
    assert.match(said[0] as string, /^event log '.*hc.log': cannot write: ENOSPC/);
    fs.free();
    log.write({ n: 61 });
    log.close();
    assert.match(said[1] as string, /^event log '.*hc.log': writing again$/);
    const lines = readFileSync(path, 'utf8').trim().split('\n');
    assert.deepEqual(
      lines.map((l) => (JSON.parse(l) as { n: number }).n),
      Array.from({ length: 62 }, (_, n) => n),
    );
  } finally {
    fs.unmount();
  }
});

test('FIFOs nobody reads: no file operation of the process waits, lines kept for readers', async () => {
  const fifos = [0, 1, 2, 3].map((i) => join(dir, `fifo${i}`));
  const logs = fifos.map((f) => {
    execFileSync('mkfifo', [f]);
    return new JsonLinesLog(f, () => {});
  });
  for (const [i, log] of logs.entries()) log.write({ i });
  const answered = await Promise.race([
    stat(dir).then(() => 'answered'),
    new Promise((r) => setTimeout(() => r('waited 5 s'), 5000)),
  ]);
  assert.equal(answered, 'answered');
  const read = fifos.map((f) => readFifo(f, 1000));
  await new Promise((r) => setTimeout(r, 200));
  for (const log of logs) log.close();
  assert.deepEqual(await Promise.all(read), ['{"i":0}\n', '{"i":1}\n', '{"i":2}\n', '{"i":3}\n']);
});
