import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readSlowRun } from '../../bench/slow.js';

test("the slow part reads slowhttptest's CSV and exit status", () => {
  const csv = [
    'Seconds,Closed,Pending,Connected,Service Available',
    '0,0,1,0,100',
    '1,0,1,51,100',
    '2,3,0,97,0',
    '3,40,0,60,0',
    '4,98,0,2,100',
  ].join('\n');
  const report = '\x1b[0mTest ended on 5th second\nExit status:\x1b[1;36m No open connections left\n\x1b[0m';
  assert.deepEqual(readSlowRun(csv, report), {
    openAtEnd: 2,
    maxOpen: 97,
    closed: 98,
    availableShare: 0.6,
    exitStatus: 'No open connections left',
  });
  assert.throws(
    () => readSlowRun('Seconds,Closed,Pending,Connected,Service Available\n', 'Error: x'),
    /no samples/,
  );
});
