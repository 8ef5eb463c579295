/**
 * One stream's compressor or decompressor, run synchronously on the data-plane thread as the
 * reference runs its libraries inside the filter callback: bytes in, bytes out. Built on
 * `minizlib` (docs/dependencies.md), which drives Node's own zlib, brotli and zstd bindings
 * synchronously and keeps them open across pieces; Node's zlib streams answer asynchronously,
 * and its one-shot `*Sync` calls cannot carry one body across pieces.
 */
import { constants } from 'node:zlib';
import { BrotliCompress, BrotliDecompress, Gunzip, Gzip, ZstdCompress, ZstdDecompress } from 'minizlib';

/** What a compiled library makes: a compressor, or a decompressor with its inflate bound. */
export type CodecSpec =
  | { kind: 'gzip' | 'brotli' | 'zstd'; options: Record<string, unknown> }
  | {
      kind: 'gunzip' | 'unbrotli' | 'unzstd';
      options: Record<string, unknown>;
      /** The most times its output may outgrow the input so far (a decompression bomb). */
      maxInflateRatio: number;
    };

type Engine = Gzip | Gunzip | BrotliCompress | BrotliDecompress | ZstdCompress | ZstdDecompress;

/**
 * A decompressor reads its input in pieces this big at most, and one piece may make at most the
 * inflate ratio times as much (`maxOutputLength`), checked before the output is made: a small
 * bomb never becomes a large buffer.
 */
const INFLATE_PIECE = 16 * 1024;

function engine(spec: CodecSpec): Engine {
  // Options the zlib bindings read, passed through minizlib untouched.
  const o = spec.options as object;
  switch (spec.kind) {
    // Each piece is flushed, as the reference's compressors flush each data callback.
    case 'gzip':
      return new Gzip({ ...o, flush: constants.Z_SYNC_FLUSH });
    case 'brotli':
      return new BrotliCompress({ ...o, flush: constants.BROTLI_OPERATION_FLUSH });
    case 'zstd':
      return new ZstdCompress({ ...o, flush: constants.ZSTD_e_flush });
    case 'gunzip':
      return new Gunzip({ ...o, maxOutputLength: spec.maxInflateRatio * INFLATE_PIECE } as object);
    case 'unbrotli':
      return new BrotliDecompress({ ...o, maxOutputLength: spec.maxInflateRatio * INFLATE_PIECE } as object);
    case 'unzstd':
      return new ZstdDecompress({ ...o, maxOutputLength: spec.maxInflateRatio * INFLATE_PIECE } as object);
  }
}

/** One body's codec. `write` returns null once the input proved corrupt (or a bomb); nothing more comes out. */
export class Codec {
  private readonly engine: Engine;
  private readonly out: Buffer[] = [];
  private failed = false;
  private readonly ratio: number;
  /** A decompressor's bytes in and out so far, for its inflate ratio. */
  private bytesIn = 0;
  private bytesOut = 0;

  constructor(spec: CodecSpec) {
    this.ratio = 'maxInflateRatio' in spec ? spec.maxInflateRatio : 0;
    this.engine = engine(spec);
    this.engine.on('data', (b: Buffer) => this.out.push(b));
    this.engine.on('error', () => {
      this.failed = true;
    });
  }

  /** True once the input proved corrupt. */
  get broken(): boolean {
    return this.failed;
  }

  /** The bytes `chunk` makes; with `end`, the body's last ones too. Null once broken. */
  write(chunk: Buffer, end: boolean): Buffer | null {
    if (this.failed) return null;
    if (this.ratio === 0) {
      if (chunk.length > 0) this.engine.write(chunk);
    } else {
      for (let at = 0; at < chunk.length && !this.failed; at += INFLATE_PIECE) {
        const piece = chunk.subarray(at, at + INFLATE_PIECE);
        const before = this.out.length;
        this.engine.write(piece);
        this.bytesIn += piece.length;
        for (let i = before; i < this.out.length; i++) this.bytesOut += (this.out[i] as Buffer).length;
        if (this.bytesOut > this.ratio * this.bytesIn) this.failed = true;
      }
    }
    if (end && !this.failed) this.engine.end();
    if (this.failed) {
      this.close();
      return null;
    }
    const out = this.out.length === 1 ? (this.out[0] as Buffer) : Buffer.concat(this.out);
    this.out.length = 0;
    return out;
  }

  /** Releases the native state (the body ended, or the request did). */
  close(): void {
    this.engine.close();
  }
}
