import type { Counters } from '../../../../stats/store.js';
import type { StreamInfo } from '../../../access-log/stream-info.js';
import { headerValue, removeHeader, setHeader } from '../../../codec/request.js';
import { CodecFilter, directionOn } from '../../compression/codec-filter.js';
import { fieldValue, hasToken, noTransform, responseHasBody } from '../../compression/headers.js';
import { Codec } from '../../compression/stream.js';
import type { RuntimeLookup } from '../../runtime-fraction.js';
import { CONTINUE, type FilterStatus, type FilterStream, type StreamFilter } from '../api.js';
import { type Candidate, chooseEncoding, type EncodingDecision } from './accept-encoding.js';
import type { CompressorConfig, CompressorPerRoute, DirectionRules } from './config.js';

/** One direction's counters, under `<stat_prefix>compressor.<library name>.<library>.[request.|response.]`. */
export const DIRECTION_COUNTERS = {
  compressed: 'compressed',
  notCompressed: 'not_compressed',
  uncompressedBytes: 'total_uncompressed_bytes',
  compressedBytes: 'total_compressed_bytes',
  tooSmall: 'content_length_too_small',
};
type DirectionStats = Counters<typeof DIRECTION_COUNTERS>;

/** The response side's own counters, at the library's root whatever the direction prefix. */
export const RESPONSE_COUNTERS = {
  noAcceptHeader: 'no_accept_header',
  identity: 'header_identity',
  used: 'header_compressor_used',
  overshadowed: 'header_compressor_overshadowed',
  wildcard: 'header_wildcard',
  notValid: 'header_not_valid',
  etag: 'not_compressed_etag',
};

/** What one connection manager's compressor filter shares across its requests. */
export interface CompressorShared {
  config: CompressorConfig;
  /** The library's `Content-Encoding`. */
  encoding: string;
  request: DirectionStats;
  response: DirectionStats;
  responseOnly: Counters<typeof RESPONSE_COUNTERS>;
  runtime: RuntimeLookup;
  configType: string;
}

/** The compressors of one request's chain, in chain order, and their one decision on its encoding. */
interface RequestCompressors {
  filters: CompressorShared[];
  decision: EncodingDecision | null;
}

/** Per request, keyed by its record: the compressor filters of a chain decide together. */
const byRequest = new WeakMap<StreamInfo, RequestCompressors>();

const EMPTY = Buffer.alloc(0);

/** The media type of a `Content-Type` (parameters dropped), lowercase; '' without one. */
function mediaType(value: string | undefined): string {
  if (value === undefined) return '';
  const semi = value.indexOf(';');
  return (semi < 0 ? value : value.slice(0, semi)).trim().toLowerCase();
}

/**
 * One request's compressor filter, as the reference's `envoy.filters.http.compressor`: the
 * response compressed in the encoding the client prefers among the chain's compressors, the
 * request body too when `request_direction_config` asks.
 */
export class CompressorFilter extends CodecFilter<DirectionStats> implements StreamFilter {
  private acceptEncoding: string | undefined = undefined;
  private perRoute: CompressorPerRoute | undefined = undefined;

  constructor(private readonly s: CompressorShared) {
    super(s);
  }

  decodeHeaders(stream: FilterStream): FilterStatus {
    const s = this.s;
    let compressors = byRequest.get(stream.info);
    if (compressors === undefined) {
      compressors = { filters: [], decision: null };
      byRequest.set(stream.info, compressors);
    }
    compressors.filters.push(s);
    const req = stream.req;
    this.acceptEncoding = headerValue(req, 'accept-encoding');
    this.perRoute = stream.perRoute(s.configType) as CompressorPerRoute | undefined;
    if (
      this.responseEnabled() &&
      (this.perRoute?.removeAcceptEncoding ?? s.config.response.removeAcceptEncoding)
    )
      removeHeader(req.headers, 'accept-encoding');
    const rules = s.config.request;
    if (
      rules !== null &&
      req.hasBody &&
      directionOn(rules.enabled, s.runtime) &&
      this.longEnough(rules, req.contentLength, s.request) &&
      this.typeAllowed(rules, headerValue(req, 'content-type')) &&
      headerValue(req, 'content-encoding') === undefined
    ) {
      req.contentLength = -1;
      req.headers.push('content-encoding', s.encoding);
      s.request.compressed.inc();
      this.requestCodec = this.codec();
    } else s.request.notCompressed.inc();
    return CONTINUE;
  }

  encodeHeaders(status: number, headers: string[], stream: FilterStream): FilterStatus {
    // The proxy's own replies are compressed too, as the reference's pass its checks alike.
    this.newResponse();
    const s = this.s;
    const rules = s.config.response;
    const bigEnough = this.responseEnabled() && this.longEnough(rules, stream.responseLength, s.response);
    const compressible =
      bigEnough &&
      !rules.uncompressibleStatuses.has(status) &&
      this.typeAllowed(rules, fieldValue(headers, 'content-type')) &&
      !noTransform(headers) &&
      this.etagAllowed(headers) &&
      fieldValue(headers, 'content-encoding') === undefined;
    if (
      responseHasBody(status, stream.req.method, stream.responseLength) &&
      this.acceptEncodingAllowed(bigEnough, headers, stream.info) &&
      compressible
    ) {
      sanitizeEtag(headers);
      stream.responseLength = -1;
      headers.push('content-encoding', s.encoding);
      s.response.compressed.inc();
      this.responseCodec = this.codec();
    } else s.response.notCompressed.inc();
    // A cache in front must know the resource has a compressed form, even when this client got none.
    if (compressible) addVary(headers);
    return CONTINUE;
  }

  private codec(): Codec {
    return new Codec((this.s.config.library as NonNullable<CompressorConfig['library']>).codec);
  }

  protected transform(codec: Codec, stats: DirectionStats, chunk: Buffer, end: boolean): Buffer {
    stats.uncompressedBytes.add(chunk.length);
    const out = codec.write(chunk, end) ?? EMPTY;
    stats.compressedBytes.add(out.length);
    return out;
  }

  /** Response compression, as the route's override (if any) or the filter's flag says. */
  private responseEnabled(): boolean {
    return this.perRoute?.responseEnabled ?? directionOn(this.s.config.response.enabled, this.s.runtime);
  }

  /** A declared length at least the minimum (an unknown length is); counts one too small. */
  private longEnough(rules: DirectionRules, length: number, stats: DirectionStats): boolean {
    if (length < 0 || length >= rules.minLength) return true;
    stats.tooSmall.inc();
    return false;
  }

  private typeAllowed(rules: DirectionRules, contentType: string | undefined): boolean {
    return contentType === undefined || rules.contentTypes.has(mediaType(contentType));
  }

  private etagAllowed(headers: readonly string[]): boolean {
    if (!this.s.config.response.disableOnEtag || fieldValue(headers, 'etag') === undefined) return true;
    this.s.responseOnly.etag.inc();
    return false;
  }

  /**
   * Whether the client's `Accept-Encoding` picks this filter's encoding, decided once for all
   * the chain's compressors and counted by each. Nothing is counted when the response is not to
   * be compressed anyway (off, or too small).
   */
  private acceptEncodingAllowed(bigEnough: boolean, headers: readonly string[], info: StreamInfo): boolean {
    if (!bigEnough) return false;
    const stats = this.s.responseOnly;
    if (this.acceptEncoding === undefined) {
      stats.noAcceptHeader.inc();
      return false;
    }
    const compressors = byRequest.get(info);
    if (compressors === undefined) return false;
    if (compressors.decision === null) {
      const type = mediaType(fieldValue(headers, 'content-type'));
      const candidates: Candidate[] = compressors.filters
        .filter((f) => type === '' || f.config.response.contentTypes.has(type))
        .map((f) => ({ encoding: f.encoding, chooseFirst: f.config.chooseFirst }));
      compressors.decision = chooseEncoding(this.acceptEncoding, candidates);
    }
    const { encoding, verdict } = compressors.decision;
    const chosen = encoding === this.s.encoding;
    if (verdict === 'valid') (chosen ? stats.used : stats.overshadowed).inc();
    else if (verdict === 'identity') stats.identity.inc();
    else if (verdict === 'wildcard') stats.wildcard.inc();
    else stats.notValid.inc();
    return chosen;
  }
}

/** A strong validator does not hold for the compressed bytes: dropped; a weak one stays. */
function sanitizeEtag(headers: string[]): void {
  const etag = fieldValue(headers, 'etag');
  if (etag !== undefined && etag.length > 2 && !/^[wW]\//.test(etag)) removeHeader(headers, 'etag');
}

function addVary(headers: string[]): void {
  const vary = fieldValue(headers, 'vary');
  if (vary === undefined) headers.push('vary', 'Accept-Encoding');
  else if (!hasToken(vary, 'accept-encoding')) setHeader(headers, 'vary', `${vary}, Accept-Encoding`);
}
