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
