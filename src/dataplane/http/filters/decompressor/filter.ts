import type { Counter, Counters } from '../../../../stats/store.js';
import { headerValue, removeHeader, setHeader } from '../../../codec/request.js';
import { CodecFilter, directionOn } from '../../compression/codec-filter.js';
import { fieldValue, noTransform, responseHasBody } from '../../compression/headers.js';
import { Codec } from '../../compression/stream.js';
import type { RuntimeLookup } from '../../runtime-fraction.js';
import { CONTINUE, type FilterStatus, type FilterStream, type StreamFilter } from '../api.js';
import type { DecompressorConfig, DecompressRules } from './config.js';

/** One direction's counters, under `<stat_prefix>decompressor.<library name>.<library>.{request,response}.`. */
export const DECOMPRESS_COUNTERS = {
  decompressed: 'decompressed',
  notDecompressed: 'not_decompressed',
  uncompressedBytes: 'total_uncompressed_bytes',
  compressedBytes: 'total_compressed_bytes',
};
type DecompressStats = Counters<typeof DECOMPRESS_COUNTERS>;

/** What one connection manager's decompressor filter shares across its requests. */
export interface DecompressorShared {
  config: DecompressorConfig;
  encoding: string;
  request: DecompressStats;
  response: DecompressStats;
  /** `decompressor_library.<zlib_data_error|brotli_error|zstd_generic_error>`: a body that would not decompress. */
  libraryErrors: Counter;
  runtime: RuntimeLookup;
}

const EMPTY = Buffer.alloc(0);

/** `Accept-Encoding` with `encoding` at full weight, once, after the codings it had. */
export function withAcceptedEncoding(value: string | undefined, encoding: string): string {
  const kept = (value ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter((t) => {
      const semi = t.indexOf(';');
      return t !== '' && (semi < 0 ? t : t.slice(0, semi)).trim().toLowerCase() !== encoding;
    });
  kept.push(encoding);
  return kept.join(',');
}

/**
 * One request's decompressor filter, as the reference's `envoy.filters.http.decompressor`: a body
 * whose first `Content-Encoding` is the library's is decompressed on its way, in each direction
 * that is on, and that coding dropped from the header.
 */
export class DecompressorFilter extends CodecFilter<DecompressStats> implements StreamFilter {
  constructor(private readonly s: DecompressorShared) {
    super(s);
  }

  decodeHeaders(stream: FilterStream): FilterStatus {
    const { s } = this;
    const req = stream.req;
    if (directionOn(s.config.response.enabled, s.runtime) && s.config.advertiseAcceptEncoding)
      setHeader(
        req.headers,
        'accept-encoding',
        withAcceptedEncoding(headerValue(req, 'accept-encoding'), s.encoding),
      );
    // A request without a body has nothing to decompress (and is not counted).
    if (!req.hasBody) return CONTINUE;
    if (this.applies(s.config.request, req.headers, s.request)) {
      req.contentLength = -1;
      this.requestCodec = new Codec(this.library().codec);
    }
    return CONTINUE;
  }

  encodeHeaders(status: number, headers: string[], stream: FilterStream): FilterStatus {
    this.newResponse();
    if (stream.localReply || !responseHasBody(status, stream.req.method, stream.responseLength))
      return CONTINUE;
    if (this.applies(this.s.config.response, headers, this.s.response)) {
      stream.responseLength = -1;
      this.responseCodec = new Codec(this.library().codec);
    }
    return CONTINUE;
  }

  private library(): NonNullable<DecompressorConfig['library']> {
    return this.s.config.library as NonNullable<DecompressorConfig['library']>;
  }

  /**
   * Whether this body is decompressed, counted either way: the direction is on, no
   * `no-transform` forbids it, and the library's coding is the first the body names (the one
   * applied last). That coding leaves `Content-Encoding`.
   */
  private applies(rules: DecompressRules, headers: string[], stats: DecompressStats): boolean {
    const codings = fieldValue(headers, 'content-encoding');
    const first = codings === undefined ? '' : (codings.split(',')[0] as string).trim().toLowerCase();
    if (
      !directionOn(rules.enabled, this.s.runtime) ||
      (!rules.ignoreNoTransform && noTransform(headers)) ||
      first !== this.s.encoding
    ) {
      stats.notDecompressed.inc();
      return false;
    }
    stats.decompressed.inc();
    const comma = (codings as string).indexOf(',');
    const rest = comma < 0 ? '' : (codings as string).slice(comma + 1).trim();
    if (rest === '') removeHeader(headers, 'content-encoding');
    else setHeader(headers, 'content-encoding', rest);
    return true;
  }

  /**
   * The body's next decompressed bytes. A body that will not decompress (corrupt, cut short, or
   * past its inflate ratio) is counted once and goes on no further, as the reference's.
   */
  protected transform(codec: Codec, stats: DecompressStats, chunk: Buffer, end: boolean): Buffer {
    const wasBroken = codec.broken;
    const out = codec.write(chunk, end);
    stats.compressedBytes.add(chunk.length);
    if (out === null) {
      if (!wasBroken) this.s.libraryErrors.inc();
      return EMPTY;
    }
    stats.uncompressedBytes.add(out.length);
    return out;
  }
}
