import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import fc from 'fast-check';
import { readLogTail } from '../../src/control/log-tail.js';

const dir = mkdtempSync(join(tmpdir(), 'log-tail-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const HEADER = `${JSON.stringify({ format: 'proxy-event-log', version: 1, product: 't', options: {}, bootstrap: null, opened_at: '' })}\n`;
const envelope = (seq: number, pad = 0) =>
  `${JSON.stringify({ seq, at: seq, source: 't', event: { type: 'runtime/modified', values: { pad: 'x'.repeat(pad) } } })}\n`;
const checkpoint = (seq: number, pad = 0) =>
  `${JSON.stringify({ checkpoint: { seq, at: seq, state: { pad: 'y'.repeat(pad) } } })}\n`;

function tailOf(text: string) {
  const path = join(dir, 'log.ndjson');
  writeFileSync(path, text);
  return readLogTail(path);
}

test('no file, an empty one, a header only', () => {
  assert.equal(readLogTail(join(dir, 'absent.ndjson')), null);
  assert.deepEqual(tailOf(''), { lastSeq: 0, completeBytes: 0, size: 0 });
  assert.deepEqual(tailOf(HEADER), { lastSeq: 0, completeBytes: HEADER.length, size: HEADER.length });
});

test('the last envelope or checkpoint, past a later header and a torn tail', () => {
  const text = HEADER + envelope(1) + checkpoint(2, 200_000) + HEADER;
  const tail = tailOf(`${text}{"seq":3,"at`);
  assert.deepEqual(tail, {
    lastSeq: 2,
    completeBytes: Buffer.byteLength(text),
    size: Buffer.byteLength(text) + 12,
  });
});

test('lines of any length around the 64 KiB read size are found whole', () => {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 140_000 })), { minLength: 1, maxLength: 6 }),
      fc.string({ maxLength: 70 }).filter((s) => !s.includes('\n')),
      (lines, torn) => {
        const text =
          HEADER + lines.map(([cp, pad], i) => (cp ? checkpoint(i + 1, pad) : envelope(i + 1, pad))).join('');
        const tail = tailOf(text + torn);
        assert.equal(tail?.lastSeq, lines.length);
        assert.equal(tail?.completeBytes, Buffer.byteLength(text));
      },
    ),
    { seed: 11, numRuns: 40 },
  );
});

test('a sequence number past 2^53 is no sequence number: the restart numbers on from the last good one', () => {
  // Root cause: a last line whose `seq` JSON.parse rounds (9007199254740993 reads as 2^53) was
  // taken as the last sequence number; the restarted run then stamped every event 2^53 (adding
  // 1 no longer changes it), acknowledged every mutation, and left a file that replays only up
  // to its first repeat ("seq 9007199254740992 does not follow 9007199254740992").
  const corrupt = envelope(3).replace('"seq":3', '"seq":9007199254740993');
  assert.equal(tailOf(HEADER + envelope(1) + envelope(2) + corrupt)?.lastSeq, 2);
  const checkpointed = checkpoint(3).replace('"seq":3', `"seq":${2 ** 60}`);
  assert.equal(tailOf(HEADER + envelope(1) + envelope(2) + checkpointed)?.lastSeq, 2);
  assert.equal(tailOf(HEADER + envelope(Number.MAX_SAFE_INTEGER))?.lastSeq, Number.MAX_SAFE_INTEGER);
});
