import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FrameWriter, TYPE } from '../../../../src/dataplane/codec/h2/frames.js';
import { parseFrames } from '../../../helpers/h2-frames.js';

test('a 13-byte frame whose header fits what is left of the block, but not its value, goes whole into a new block', () => {
  // Root cause: u32Frame reserved room for the frame header only, so with 9 to 12 bytes left in
  // the block its value was written past the end (a RangeError from a WINDOW_UPDATE or RST_STREAM).
  const w = new FrameWriter();
  // A DATA frame copied into the block in small pieces, leaving 10 bytes of it free.
  const big = Buffer.alloc(16 * 1024 - 9 - 10, 1);
  w.header(big.length, TYPE.DATA, 0, 1);
  for (let at = 0; at < big.length; at += 2000) w.bytes(big, at, Math.min(at + 2000, big.length));
  w.u32Frame(TYPE.WINDOW_UPDATE, 1, 1234);
  const frames = parseFrames(Buffer.concat(w.take() ?? []));
  assert.deepEqual(
    frames.map((f) => [f.type, f.streamId, f.payload.length]),
    [
      [TYPE.DATA, 1, big.length],
      [TYPE.WINDOW_UPDATE, 1, 4],
    ],
  );
  assert.equal(frames[1]?.payload.readUInt32BE(0), 1234);
});

test('taken regions stay as written after the writer lets its block go and writes more', () => {
  const w = new FrameWriter();
  w.u32Frame(TYPE.RST_STREAM, 3, 8);
  const first = w.take() ?? [];
  w.release();
  w.u32Frame(TYPE.RST_STREAM, 5, 2);
  const second = w.take() ?? [];
  assert.deepEqual(
    [...parseFrames(Buffer.concat(first)), ...parseFrames(Buffer.concat(second))].map((f) => [
      f.streamId,
      f.payload.readUInt32BE(0),
    ]),
    [
      [3, 8],
      [5, 2],
    ],
  );
  assert.equal(w.take(), null);
});
