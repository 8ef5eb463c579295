/**
 * The frame reader the mysql and postgres watchers share: frames cut across chunks anywhere
 * read the same as whole ones, bodies are kept only as far as asked, and a refused header or
 * an `onFrame` that says stop ends the reading.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  type FrameFormat,
  LengthPrefixedFrames,
} from '../../../src/dataplane/network-filters/length-prefixed-frames.js';

/** A 2-byte header: a tag, then the body's length (255 refused); keeps the body's first 3 bytes. */
function reader(stopAt = ''): { frames: LengthPrefixedFrames; seen: string[] } {
  const seen: string[] = [];
  const format: FrameFormat = {
    headerLength: 2,
    bodyLength: (header) => (header[1] === 255 ? -1 : (header[1] as number)),
    keep: () => 3,
    onFrame(header, kept, length) {
      const tag = String.fromCharCode(header[0] as number);
      seen.push(`${tag}${length}:${kept.toString('latin1')}`);
      return tag !== stopAt;
    },
  };
  return { frames: new LengthPrefixedFrames(format), seen };
}

const bytes = (...frames: Array<[string, string]>): Buffer =>
  Buffer.concat(
    frames.map(([tag, body]) =>
      Buffer.concat([Buffer.from([tag.charCodeAt(0), body.length]), Buffer.from(body)]),
    ),
  );

test('frames in one chunk, and an empty body, each reach onFrame with the first bytes kept', () => {
  const { frames, seen } = reader();
  assert.equal(frames.feed(bytes(['a', 'hello'], ['b', ''], ['c', 'xy'])), true);
  assert.deepEqual(seen, ['a5:hel', 'b0:', 'c2:xy']);
});

test('a header the format refuses, or onFrame returning false, stops the reading', () => {
  const refused = reader();
  assert.equal(
    refused.frames.feed(Buffer.concat([bytes(['a', 'x']), Buffer.from([0x62, 255, 1, 2])])),
    false,
  );
  assert.deepEqual(refused.seen, ['a1:x']);
  const stopped = reader('s');
  assert.equal(stopped.frames.feed(bytes(['s', 'one'], ['t', 'two'])), false);
  assert.deepEqual(stopped.seen, ['s3:one']);
});

test('property: any cutting of the stream into chunks reads the same frames as the whole', () => {
  const frame = fc.tuple(
    fc.constantFrom('a', 'b', 'c'),
    fc.string({ maxLength: 20 }).map((s) => s.replace(/[^\x20-\x7e]/g, '')),
  );
  fc.assert(
    fc.property(fc.array(frame, { maxLength: 8 }), fc.array(fc.nat(), { maxLength: 10 }), (list, cuts) => {
      const stream = bytes(...list);
      const whole = reader();
      whole.frames.feed(stream);
      const cut = reader();
      let at = 0;
      for (const c of [...cuts.map((n) => n % (stream.length + 1))].sort((a, b) => a - b)) {
        cut.frames.feed(stream.subarray(at, Math.max(at, c)));
        at = Math.max(at, c);
      }
      cut.frames.feed(stream.subarray(at));
      assert.deepEqual(cut.seen, whole.seen);
      assert.equal(whole.seen.length, list.length);
    }),
    { seed: 2020, numRuns: Number(process.env.FUZZ_RUNS ?? 300) },
  );
});
