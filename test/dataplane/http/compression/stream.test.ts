/**
 * The per-stream codecs of the compression filters: bodies in any pieces come out whole in
 * every library; corrupt, cut-short and bomb inputs end the body (null), never the process,
 * and a bomb never becomes a large buffer.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  brotliCompressSync,
  brotliDecompressSync,
  gunzipSync,
  gzipSync,
  zstdCompressSync,
  zstdDecompressSync,
} from 'node:zlib';
import fc from 'fast-check';
import { Codec, type CodecSpec } from '../../../../src/dataplane/http/compression/stream.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 100);

/** `body` through `codec` in the pieces `cuts` makes, ended. */
function through(codec: Codec, body: Buffer, cuts: number[]): Buffer | null {
  const out: Buffer[] = [];
  let at = 0;
  for (const cut of [...cuts.filter((c) => c < body.length)].sort((a, b) => a - b)) {
    const piece = codec.write(body.subarray(at, cut), false);
    if (piece === null) return null;
    out.push(piece);
    at = cut;
  }
  const last = codec.write(body.subarray(at), true);
  return last === null ? null : Buffer.concat([...out, last]);
}

const COMPRESSORS: Array<[CodecSpec, (b: Buffer) => Buffer]> = [
  [{ kind: 'gzip', options: { windowBits: 10, memLevel: 3 } }, gunzipSync],
  [{ kind: 'brotli', options: {} }, brotliDecompressSync],
  [{ kind: 'zstd', options: {} }, zstdDecompressSync],
];
const DECOMPRESSORS: Array<[CodecSpec, (b: Buffer) => Buffer]> = [
  [{ kind: 'gunzip', options: {}, maxInflateRatio: 1000 }, gzipSync],
  [{ kind: 'unbrotli', options: {}, maxInflateRatio: 1000 }, brotliCompressSync],
  [{ kind: 'unzstd', options: {}, maxInflateRatio: 1000 }, zstdCompressSync],
];

describe('Codec', () => {
  it('compresses and decompresses a body cut in any pieces, in each library', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 40_000 }),
        fc.array(fc.nat({ max: 40_000 }), { maxLength: 6 }),
        (bytes, cuts) => {
          const body = Buffer.from(bytes);
          for (const [spec, decode] of COMPRESSORS)
            assert.ok(decode(through(new Codec(spec), body, cuts) as Buffer).equals(body), spec.kind);
          for (const [spec, encode] of DECOMPRESSORS) {
            const wire = encode(body);
            assert.ok((through(new Codec(spec), wire, cuts) as Buffer).equals(body), spec.kind);
          }
        },
      ),
      { seed: 5, numRuns: RUNS },
    );
  });

  it('ends a corrupt or cut-short body with null, once and for good', () => {
    for (const [spec, encode] of DECOMPRESSORS) {
      const corrupt = new Codec(spec);
      assert.equal(corrupt.write(Buffer.from('this is not compressed at all'), true), null, spec.kind);
      assert.equal(corrupt.write(Buffer.from('more'), false), null, spec.kind);
      assert.ok(corrupt.broken);
      const wire = encode(Buffer.from('a body that will be cut short '.repeat(50)));
      const cut = new Codec(spec);
      assert.notEqual(cut.write(wire.subarray(0, wire.length - 5), false), null, spec.kind);
      assert.equal(cut.write(Buffer.alloc(0), true), null, spec.kind);
    }
  });

  it('stops a bomb at its inflate ratio, having made no more than a piece of it', () => {
    const zeros = Buffer.alloc(16 * 1024 * 1024);
    for (const [kind, wire] of [
      ['gunzip', gzipSync(zeros)],
      ['unbrotli', brotliCompressSync(zeros)],
      ['unzstd', zstdCompressSync(zeros)],
    ] as const) {
      const codec = new Codec({ kind, options: {}, maxInflateRatio: 100 });
      const before = process.memoryUsage().arrayBuffers;
      assert.equal(codec.write(wire, true), null, kind);
      // One piece may make at most ratio x 16 KiB (1.6 MB); the 16 MB are never made.
      assert.ok(process.memoryUsage().arrayBuffers - before < 8 * 1024 * 1024, kind);
    }
  });

  it('decompresses garbage of any shape without throwing', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 4096 }), (bytes) => {
        for (const [spec] of DECOMPRESSORS) {
          const codec = new Codec(spec);
          const out = codec.write(Buffer.from(bytes), true);
          assert.ok(out === null || Buffer.isBuffer(out));
        }
      }),
      { seed: 9, numRuns: RUNS },
    );
  });
});
