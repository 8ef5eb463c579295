/**
 * The compile step of `envoy.filters.http.local_ratelimit`: its `LocalRateLimit` (v3 read at
 * v3's numbers), as the filter's config and as a route's or virtual host's own. Every field
 * acts or is refused by name.
 */
import type { JsonObject } from '../../../../../events/config.js';
import { durationMs, listOf, numberOr, objectOf } from '../../../../../reducers/settings/values.js';
import { acting, checkFields } from '../../../../bootstrap/honoured.js';
import type { Report } from '../../../../bootstrap/report.js';
import type { TokenBucketSpec } from '../../../network-filters/local-ratelimit/bucket.js';
import { appends } from '../../../router/header-mutation.js';
import { compileRuntimeFraction, type RuntimeFraction } from '../../runtime-fraction.js';
import { httpStatus } from '../ext-authz/config.js';
import type { VhRateLimits } from '../ratelimit/route-policy.js';

export const CONFIG_TYPE = 'envoy.config.filter.http.local_ratelimit.v2.LocalRateLimit';

/**
 * The config message, at v3's numbers (v3 is the only version the reference gives it), with
 * the `envoy.extensions.common.ratelimit.v3` types it uses.
 */
export const LOCAL_RATELIMIT_PROTO = `
syntax = "proto3";
package envoy.config.filter.http.local_ratelimit.v2;
message LocalRateLimit {
  string stat_prefix = 1;
  .envoy.type.HttpStatus status = 2;
  .envoy.type.TokenBucket token_bucket = 3;
  .envoy.api.v2.core.RuntimeFractionalPercent filter_enabled = 4;
  .envoy.api.v2.core.RuntimeFractionalPercent filter_enforced = 5;
  repeated .envoy.api.v2.core.HeaderValueOption response_headers_to_add = 6;
  repeated LocalRateLimitDescriptor descriptors = 8;
  uint32 stage = 9;
  repeated .envoy.api.v2.core.HeaderValueOption request_headers_to_add_when_not_enforced = 10;
  bool local_rate_limit_per_downstream_connection = 11;
  XRateLimitHeadersRFCVersion enable_x_ratelimit_headers = 12;
  VhRateLimitsOptions vh_rate_limits = 13;
  .google.protobuf.BoolValue always_consume_default_token_bucket = 14;
  bool rate_limited_as_resource_exhausted = 15;
}
message LocalRateLimitDescriptor {
  message Entry {
    string key = 1;
    string value = 2;
  }
  repeated Entry entries = 1;
  .envoy.type.TokenBucket token_bucket = 2;
}
enum XRateLimitHeadersRFCVersion {
  OFF = 0;
  DRAFT_VERSION_03 = 1;
}
enum VhRateLimitsOptions {
  OVERRIDE = 0;
  INCLUDE = 1;
  IGNORE = 2;
}
`;

/** A header the filter adds, as a literal (the reference's formatter variables are not read here). */
export interface LiteralHeader {
  name: string;
  value: string;
  append: boolean;
}

/** A `descriptors` entry: the request descriptor it matches, verbatim, and its own bucket. */
export interface LocalDescriptor {
  entries: Array<[string, string]>;
  bucket: TokenBucketSpec;
}

export interface LocalRateLimitConfig {
  statPrefix: string;
  status: number;
  /** Null: no bucket, every request is allowed (the reference's descriptors-only form). */
  bucket: TokenBucketSpec | null;
  /** `filter_enabled` / `filter_enforced`: unset means 0%, as the reference's "for safety". */
  enabled: RuntimeFraction | null;
  enforced: RuntimeFraction | null;
  responseHeaders: LiteralHeader[];
  requestHeadersWhenNotEnforced: LiteralHeader[];
  /** Strictest first (fewest tokens a second), the order the reference takes from them. */
  descriptors: LocalDescriptor[];
  /** The stage of the route `rate_limits` that make the request's descriptors. */
  stage: number;
  vhRateLimits: VhRateLimits;
  /** Whether a request whose descriptor matched takes from the filter's bucket too. */
  alwaysConsumeDefault: boolean;
  /** `enable_x_ratelimit_headers: DRAFT_VERSION_03`. */
  rateLimitHeaders: boolean;
  /** `local_rate_limit_per_downstream_connection`: each downstream connection has buckets of its own. */
  perConnection: boolean;
  /** A limited gRPC request is answered RESOURCE_EXHAUSTED (8), not UNAVAILABLE (14, what 429 maps to). */
  resourceExhausted: boolean;
  /** A route's or virtual host's config: where it was written, so its buckets are that route's own; '' for the filter's. */
  routeAt: string;
}

export const FIELD_TABLES = {
  LocalRateLimit: {
    ...acting('stat_prefix', 'status', 'token_bucket', 'filter_enabled', 'filter_enforced'),
    ...acting('response_headers_to_add', 'request_headers_to_add_when_not_enforced'),
    ...acting('descriptors', 'stage', 'vh_rate_limits', 'always_consume_default_token_bucket'),
    ...acting('enable_x_ratelimit_headers'),
    ...acting('local_rate_limit_per_downstream_connection', 'rate_limited_as_resource_exhausted'),
  },
  LocalRateLimitDescriptor: acting('entries', 'token_bucket'),
  'LocalRateLimitDescriptor.Entry': acting('key', 'value'),
  TokenBucket: acting('max_tokens', 'tokens_per_fill', 'fill_interval'),
  HttpStatus: acting('code'),
};

/** The reference refuses a shorter fill interval (its fill timer's floor). */
const MIN_FILL_INTERVAL_MS = 50;

function compileBucket(raw: JsonObject, path: string, report: Report): TokenBucketSpec {
  checkFields(raw, path, report, FIELD_TABLES.TokenBucket, 'TokenBucket');
  const maxTokens = numberOr(raw.max_tokens, 0);
  if (maxTokens <= 0) report.error(`${path}.max_tokens`, 'must be greater than 0');
  const tokensPerFill = numberOr(raw.tokens_per_fill, 1);
  if (tokensPerFill <= 0) report.error(`${path}.tokens_per_fill`, 'must be greater than 0');
  const fillIntervalMs = durationMs(raw.fill_interval, 0);
  if (raw.fill_interval === undefined)
    report.error(`${path}.fill_interval`, 'required field missing', 'missing');
  else if (fillIntervalMs < MIN_FILL_INTERVAL_MS)
    report.error(`${path}.fill_interval`, `must be at least ${MIN_FILL_INTERVAL_MS}ms`);
  return { maxTokens, tokensPerFill, fillIntervalMs };
}

/** `HeaderValueOption`s as literal headers; a value with a `%` variable is refused by name. */
function compileHeaders(list: unknown, path: string, report: Report): LiteralHeader[] {
  return listOf(list as JsonObject[]).map((option, i) => {
    const at = `${path}[${i}]`;
    const header = objectOf(option.header);
    const name = typeof header.key === 'string' ? header.key.toLowerCase() : '';
    const value = typeof header.value === 'string' ? header.value : '';
    if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(name)) report.error(`${at}.header.key`, 'must be a header name');
    if (value.includes('%'))
      report.unsupported(
        `${at}.header.value`,
        'header formatter variables in the local rate limit are not implemented',
      );
    return { name, value, append: appends(option, at, report) };
  });
}

/** The reference's order: its integer tokens a second (a fill interval under 1 s counts as 1 s). */
const tokensPerSecond = (d: LocalDescriptor) =>
  Math.floor(d.bucket.tokensPerFill / (Math.floor(d.bucket.fillIntervalMs / 1000) || 1));

/**
 * `descriptors`, each a multiple of the filter's fill interval (the reference refills them on
 * its timer's ticks) and none twice, strictest first.
 */
function compileDescriptors(
  raw: unknown,
  bucket: TokenBucketSpec | null,
  path: string,
  report: Report,
): LocalDescriptor[] {
  const seen = new Set<string>();
  const out = listOf(raw as JsonObject[]).map((d, i): LocalDescriptor => {
    const at = `${path}[${i}]`;
    checkFields(d, at, report, FIELD_TABLES.LocalRateLimitDescriptor, 'LocalRateLimitDescriptor');
    const entries = listOf(d.entries).map((e, j): [string, string] => {
      const entryAt = `${at}.entries[${j}]`;
      checkFields(e, entryAt, report, FIELD_TABLES['LocalRateLimitDescriptor.Entry'], 'Entry');
      for (const field of ['key', 'value'] as const)
        if (typeof e[field] !== 'string' || e[field] === '')
          report.error(`${entryAt}.${field}`, 'required field missing', 'missing');
      return [String(e.key ?? ''), String(e.value ?? '')];
    });
    if (entries.length === 0) report.error(`${at}.entries`, 'at least one entry is required', 'missing');
    const text = JSON.stringify(entries);
    if (seen.has(text)) report.error(at, `duplicate descriptor in the local rate descriptor: ${text}`);
    seen.add(text);
    if (d.token_bucket === undefined) report.error(`${at}.token_bucket`, 'required field missing', 'missing');
    const own = compileBucket(objectOf(d.token_bucket), `${at}.token_bucket`, report);
    if (bucket === null)
      report.error(at, "needs the filter's token_bucket: a descriptor refills on its fill interval's ticks");
    else if (own.fillIntervalMs % bucket.fillIntervalMs !== 0)
      report.error(
        `${at}.token_bucket.fill_interval`,
        'local rate descriptor limit is not a multiple of token bucket fill timer',
      );
    return { entries, bucket: own };
  });
  return out.sort((a, b) => tokensPerSecond(a) - tokensPerSecond(b));
}

/**
 * Compiles a `LocalRateLimit` at `path`: the filter's, or (`routeAt` set) a route's or virtual
 * host's own, which must have its token bucket.
 */
export function compileLocalRateLimit(
  raw: JsonObject,
  path: string,
  report: Report,
  routeAt = '',
): LocalRateLimitConfig {
  checkFields(raw, path, report, FIELD_TABLES.LocalRateLimit, 'LocalRateLimit');
  const statPrefix = typeof raw.stat_prefix === 'string' ? raw.stat_prefix : '';
  if (statPrefix === '') report.error(`${path}.stat_prefix`, 'required field missing', 'missing');
  if (raw.status !== undefined)
    checkFields(objectOf(raw.status), `${path}.status`, report, FIELD_TABLES.HttpStatus, 'HttpStatus');
  if (routeAt !== '' && raw.token_bucket === undefined)
    report.error(
      `${path}.token_bucket`,
      'local rate limit token bucket must be set for per filter configs',
      'missing',
    );
  const stage = numberOr(raw.stage, 0);
  if (stage > 10) report.error(`${path}.stage`, 'must be in [0, 10]');
  const fraction = (field: 'filter_enabled' | 'filter_enforced') =>
    raw[field] === undefined
      ? null
      : compileRuntimeFraction(objectOf(raw[field]), `${path}.${field}`, report);
  const bucket =
    raw.token_bucket === undefined
      ? null
      : compileBucket(objectOf(raw.token_bucket), `${path}.token_bucket`, report);
  const always = raw.always_consume_default_token_bucket;
  return {
    statPrefix,
    status: httpStatus(raw.status, 429, `${path}.status`, report),
    bucket,
    enabled: fraction('filter_enabled'),
    enforced: fraction('filter_enforced'),
    responseHeaders: compileHeaders(raw.response_headers_to_add, `${path}.response_headers_to_add`, report),
    requestHeadersWhenNotEnforced: compileHeaders(
      raw.request_headers_to_add_when_not_enforced,
      `${path}.request_headers_to_add_when_not_enforced`,
      report,
    ),
    descriptors: compileDescriptors(raw.descriptors, bucket, `${path}.descriptors`, report),
    stage,
    vhRateLimits: (raw.vh_rate_limits as VhRateLimits | undefined) ?? 'OVERRIDE',
    // A BoolValue, as the canonical config holds it: the value, or `{ value }`.
    alwaysConsumeDefault: !(always === false || objectOf(always).value === false),
    rateLimitHeaders: raw.enable_x_ratelimit_headers === 'DRAFT_VERSION_03',
    perConnection: raw.local_rate_limit_per_downstream_connection === true,
    resourceExhausted: raw.rate_limited_as_resource_exhausted === true,
    routeAt,
  };
}
