import { CONTINUE, type DataStatus, type FilterStream } from '../filters/api.js';
import { type FeatureFlag, featureEnabled, type RuntimeLookup } from '../runtime-fraction.js';
import type { Codec } from './stream.js';

const EMPTY = Buffer.alloc(0);

/** A direction's `enabled` flag: on when unset, else as the runtime key or its default says. */
export function directionOn(enabled: FeatureFlag | null, runtime: RuntimeLookup): boolean {
  return enabled === null || featureEnabled(enabled, runtime);
}

/**
 * The body half of a filter that rewrites bodies through a codec (the compressor and the
 * decompressor filters): once a direction's headers gave it a codec, each body piece goes
 * through it, the trailers end it, and the request's end closes both.
 */
export abstract class CodecFilter<Stats> {
  protected requestCodec: Codec | null = null;
  protected responseCodec: Codec | null = null;

  constructor(private readonly directions: { readonly request: Stats; readonly response: Stats }) {}

  /** The body's next bytes through `codec`, counted in its direction's `stats`. */
  protected abstract transform(codec: Codec, stats: Stats, chunk: Buffer, end: boolean): Buffer;

  decodeData(_stream: FilterStream, chunk: Buffer, end: boolean): DataStatus {
    return this.requestCodec === null
      ? CONTINUE
      : this.transform(this.requestCodec, this.directions.request, chunk, end);
  }

  decodeTrailers(): DataStatus {
    return this.requestCodec === null
      ? CONTINUE
      : this.transform(this.requestCodec, this.directions.request, EMPTY, true);
  }

  encodeData(_stream: FilterStream, chunk: Buffer, end: boolean): DataStatus {
    return this.responseCodec === null
      ? CONTINUE
      : this.transform(this.responseCodec, this.directions.response, chunk, end);
  }

  encodeTrailers(): DataStatus {
    return this.responseCodec === null
      ? CONTINUE
      : this.transform(this.responseCodec, this.directions.response, EMPTY, true);
  }

  /**
   * A new response head: whatever the codec made of the one before it (a local reply in place
   * of the upstream's response) ends unsent.
   */
  protected newResponse(): void {
    this.responseCodec?.close();
    this.responseCodec = null;
  }

  onDestroy(): void {
    this.requestCodec?.close();
    this.responseCodec?.close();
    this.requestCodec = this.responseCodec = null;
  }
}
