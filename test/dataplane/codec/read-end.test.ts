import assert from 'node:assert/strict';
import { test } from 'node:test';
import { atReadEnd, readBegins, readEnds } from '../../../src/dataplane/codec/read-end.js';

const recorder = (log: string[], name: string) => ({ atReadEnd: () => log.push(name) });

test('work queued in a read runs when the outermost read ends, in order, before the tick is over', () => {
  const log: string[] = [];
  readBegins();
  try {
    atReadEnd(recorder(log, 'a'));
    readBegins();
    atReadEnd(recorder(log, 'b'));
    readEnds();
    assert.deepEqual(log, [], 'an inner read ending runs nothing');
  } finally {
    readEnds();
  }
  assert.deepEqual(log, ['a', 'b']);
});

test('work queued outside a read runs at the end of the tick, all of it in one go, once', async () => {
  const log: string[] = [];
  atReadEnd(recorder(log, 'a'));
  atReadEnd(recorder(log, 'b'));
  assert.deepEqual(log, []);
  await new Promise<void>((r) => process.nextTick(r));
  assert.deepEqual(log, ['a', 'b']);
  await new Promise<void>((r) => setImmediate(r));
  assert.deepEqual(log, ['a', 'b']);
});

test('a throw from one piece of work does not leave the queue to run again', () => {
  const log: string[] = [];
  readBegins();
  atReadEnd({
    atReadEnd: () => {
      throw new Error('boom');
    },
  });
  assert.throws(() => readEnds(), /boom/);
  readBegins();
  atReadEnd(recorder(log, 'after'));
  readEnds();
  assert.deepEqual(log, ['after']);
});

test('work queued behind a piece that throws still runs, on the next tick', async () => {
  // Root cause: the queue is the thread's, so the work behind a throw is other connections'
  // heads; it was cleared unrun, and those clients waited for heads that never came.
  const log: string[] = [];
  readBegins();
  atReadEnd({
    atReadEnd: () => {
      throw new Error('boom');
    },
  });
  atReadEnd(recorder(log, 'b'));
  atReadEnd(recorder(log, 'c'));
  assert.throws(() => readEnds(), /boom/);
  assert.deepEqual(log, []);
  await new Promise<void>((r) => process.nextTick(r));
  assert.deepEqual(log, ['b', 'c']);
});
