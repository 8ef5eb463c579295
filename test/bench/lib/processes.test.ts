import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readFileSync } from 'node:fs';
import { rssParts, rssPartsOf } from '../../../bench/lib/processes.js';

const SMAPS = `55d0c0000000-55d0c2000000 r-xp 00000000 08:01 1234   /usr/bin/node
Size:              32768 kB
Rss:                2048 kB
VmFlags: rd ex mr mw me
55d0c4000000-55d0c4400000 rw-p 00000000 00:00 0          [heap]
Size:               4096 kB
Rss:                1024 kB
7f0000000000-7f0000040000 rw-p 00000000 00:00 0 
Size:                256 kB
Rss:                 256 kB
7f0000040000-7f0000080000 rw-p 00000000 00:00 0 
Size:                256 kB
Rss:                 128 kB
7f0000100000-7f0000200000 rw-p 00000000 00:00 0 
Size:               1024 kB
Rss:                 512 kB
`;

test("a resident set is split into files, V8's 256 KiB heap pages and the rest", () => {
  assert.deepEqual(rssPartsOf(SMAPS), { file: 2048 * 1024, v8: 384 * 1024, rest: 1536 * 1024 });
});

test('lines of no mapping, and a text cut short, are skipped', () => {
  assert.deepEqual(rssPartsOf('Rss: 12 kB\ngarbage\n7f00-7f01 rw-p'), { file: 0, v8: 0, rest: 0 });
  assert.deepEqual(rssPartsOf(''), { file: 0, v8: 0, rest: 0 });
  const cut = SMAPS.slice(0, SMAPS.indexOf('[heap]') + 6);
  assert.deepEqual(rssPartsOf(cut), { file: 2048 * 1024, v8: 0, rest: 0 });
});

test('this process: its parts add up to the resident set the kernel sums', () => {
  // The kernel's own sum (VmRSS in /proc/PID/status is an estimate, off by megabytes).
  const rollup = () =>
    Number(/^Rss:\s+(\d+) kB/m.exec(readFileSync('/proc/self/smaps_rollup', 'utf8'))?.[1]) * 1024;
  // Read a moment apart: the process (other tests run in it meanwhile) may have touched or given
  // back megabytes in between, so a reading counts when the rollup held still around it; a
  // parser that missed or doubled a kind of mapping is off in every attempt.
  const misses: string[] = [];
  for (let attempt = 0; attempt < 5; attempt++) {
    const before = rollup();
    const parts = rssParts(process.pid);
    const after = rollup();
    assert.ok(parts.file > 0 && parts.v8 > 0 && parts.rest > 0, JSON.stringify(parts));
    const sum = parts.file + parts.v8 + parts.rest;
    const rss = (before + after) / 2;
    if (Math.abs(sum - rss) < rss * 0.1) return;
    misses.push(`parts ${sum} bytes against the rollup's ${before}..${after}`);
  }
  assert.fail(misses.join('; '));
});
