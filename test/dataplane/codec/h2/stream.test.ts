import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CLOSED, ClosedStreams, RESET_BY_US } from '../../../../src/dataplane/codec/h2/stream.js';

test('closed streams: the 1,024 most recent are remembered, the oldest forgotten first', () => {
  const gone = new ClosedStreams();
  for (let id = 1; id <= 2 * 1024 + 1; id += 2) gone.remember(id, id % 4 === 1 ? RESET_BY_US : CLOSED);
  // 1,025 ids went in: the first (1) is forgotten, the second (3) is the oldest kept.
  assert.equal(gone.wasClosed(1), false);
  assert.equal(gone.resetByUs(1), false);
  assert.equal(gone.wasClosed(3), true);
  assert.equal(gone.resetByUs(3), false);
  assert.equal(gone.resetByUs(5), true);
  assert.equal(gone.wasClosed(2049), true);
  // Remembering a known id again neither moves it nor forgets another.
  gone.remember(3, CLOSED);
  assert.equal(gone.wasClosed(5), true);
  gone.remember(2051, CLOSED);
  assert.equal(gone.wasClosed(3), false, 'the oldest went');
  assert.equal(gone.wasClosed(5), true);
});

test('closed streams: a reset of ours is not overwritten by a later close of the same stream', () => {
  const gone = new ClosedStreams();
  gone.remember(7, RESET_BY_US);
  gone.remember(7, CLOSED);
  assert.equal(gone.resetByUs(7), true);
  gone.remember(9, CLOSED);
  gone.remember(9, RESET_BY_US);
  assert.equal(gone.resetByUs(9), true);
});

test('closed streams: ids up to 2^31-1 are kept exactly, and any number of them keeps the set at 1,024', () => {
  const gone = new ClosedStreams();
  const top = 2 ** 31 - 1;
  for (let i = 0; i < 5000; i++) gone.remember(top - 2 * i, CLOSED);
  assert.equal(gone.wasClosed(top - 2 * 4999), true);
  assert.equal(gone.wasClosed(top - 2 * (4999 - 1023)), true);
  assert.equal(gone.wasClosed(top - 2 * (4999 - 1024)), false);
  assert.equal(gone.wasClosed(top), false);
});
