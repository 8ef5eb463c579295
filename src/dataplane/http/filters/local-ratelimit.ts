/**
 * `envoy.filters.http.local_ratelimit`: a token bucket over a connection manager's requests,
 * kept in this process (no rate limit service). A request the bucket refuses is answered with
 * `status` (429) and `local_rate_limited`, unless the filter only counts (`filter_enforced`).
 * See docs/http-filters.md.
 */
import type { JsonObject } from '../../../../events/config.js';
import { durationMs, listOf, numberOr, objectOf } from '../../../../reducers/settings/values.js';
import { acting, checkFields, notYet } from '../../../bootstrap/honoured.js';
import type { Report } from '../../../bootstrap/report.js';
import { FLAG } from '../../access-log/stream-info.js';
import { removeHeader } from '../../codec/request.js';
import { TokenBucket, type TokenBucketSpec } from '../../network-filters/local-ratelimit/bucket.js';
import { appends } from '../../router/header-mutation.js';
import {
  compileRuntimeFraction,
  fractionEnabled,
  type RuntimeFraction,
  randomDraw,
} from '../runtime-fraction.js';
import {
  CONTINUE,
  type FilterStatus,
  type FilterStream,
  type HttpFilterFactory,
  STOP_ITERATION,
} from './api.js';
import { httpStatus } from './ext-authz/config.js';

const CONFIG_TYPE = 'envoy.config.filter.http.local_ratelimit.v2.LocalRateLimit';

/** The config message, at v3's numbers (v3 is the only version the reference gives it). */
const LOCAL_RATELIMIT_PROTO = `
syntax = "proto3";
package envoy.config.filter.http.local_ratelimit.v2;
message LocalRateLimit {
  string stat_prefix = 1;
  .envoy.type.HttpStatus status = 2;
  .envoy.type.TokenBucket token_bucket = 3;
  .envoy.api.v2.core.RuntimeFractionalPercent filter_enabled = 4;
  .envoy.api.v2.core.RuntimeFractionalPercent filter_enforced = 5;
  repeated .envoy.api.v2.core.HeaderValueOption response_headers_to_add = 6;
  uint32 stage = 9;
  repeated .envoy.api.v2.core.HeaderValueOption request_headers_to_add_when_not_enforced = 10;
  bool local_rate_limit_per_downstream_connection = 11;
  .google.protobuf.BoolValue always_consume_default_token_bucket = 14;
  bool rate_limited_as_resource_exhausted = 15;
}
`;

/** A header the filter adds, as a literal (the reference's formatter variables are not read here). */
interface LiteralHeader {
  name: string;
  value: string;
  append: boolean;
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
}

const FIELD_TABLES = {
  LocalRateLimit: {
    ...acting('stat_prefix', 'status', 'token_bucket', 'filter_enabled', 'filter_enforced'),
    ...acting('response_headers_to_add', 'request_headers_to_add_when_not_enforced'),
    local_rate_limit_per_downstream_connection: 'act' as const,
    stage: notYet('LocalRateLimit.stage (descriptors)'),
    always_consume_default_token_bucket: notYet(
      'LocalRateLimit.always_consume_default_token_bucket (descriptors)',
    ),
    rate_limited_as_resource_exhausted: notYet(
      'LocalRateLimit.rate_limited_as_resource_exhausted (gRPC status)',
    ),
  },
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

function compile(raw: JsonObject, path: string, report: Report): LocalRateLimitConfig {
  checkFields(raw, path, report, FIELD_TABLES.LocalRateLimit, 'LocalRateLimit');
  const statPrefix = typeof raw.stat_prefix === 'string' ? raw.stat_prefix : '';
  if (statPrefix === '') report.error(`${path}.stat_prefix`, 'required field missing', 'missing');
  if (raw.local_rate_limit_per_downstream_connection === true)
    report.unsupported(
      `${path}.local_rate_limit_per_downstream_connection`,
      'a bucket per downstream connection is not implemented',
    );
  if (raw.status !== undefined)
    checkFields(objectOf(raw.status), `${path}.status`, report, FIELD_TABLES.HttpStatus, 'HttpStatus');
  const fraction = (field: 'filter_enabled' | 'filter_enforced') =>
    raw[field] === undefined
      ? null
      : compileRuntimeFraction(objectOf(raw[field]), `${path}.${field}`, report);
  return {
    statPrefix,
    status: httpStatus(raw.status, 429, `${path}.status`, report),
    bucket:
      raw.token_bucket === undefined
        ? null
        : compileBucket(objectOf(raw.token_bucket), `${path}.token_bucket`, report),
    enabled: fraction('filter_enabled'),
    enforced: fraction('filter_enforced'),
    responseHeaders: compileHeaders(raw.response_headers_to_add, `${path}.response_headers_to_add`, report),
    requestHeadersWhenNotEnforced: compileHeaders(
      raw.request_headers_to_add_when_not_enforced,
      `${path}.request_headers_to_add_when_not_enforced`,
      report,
    ),
  };
}

function addHeaders(headers: string[], add: readonly LiteralHeader[]): void {
  for (const h of add) {
    if (!h.append) removeHeader(headers, h.name);
    headers.push(h.name, h.value);
  }
}

export const localRateLimitFactory: HttpFilterFactory<LocalRateLimitConfig> = {
  name: 'envoy.filters.http.local_ratelimit',
  configType: CONFIG_TYPE,
  typeAliases: { 'envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit': CONFIG_TYPE },
  schema: { source: LOCAL_RATELIMIT_PROTO },
  fieldTables: FIELD_TABLES,
  compile,
  /**
   * One bucket per filter config for the whole process, as the reference's is shared by its
   * workers: every data-plane thread building this filter with this config on this listener and
   * connection manager takes from the same tokens (docs/http-filters.md).
   */
  start(config, ctx) {
    const bucket =
      config.bucket === null
        ? null
        : new TokenBucket(
            config.bucket,
            `http.local_ratelimit\0${ctx.listenerName}\0${ctx.scope.prefix}\0${JSON.stringify(config)}`,
          );
    // As the reference: under the root, `<stat_prefix>.http_local_rate_limit.`.
    const scope = ctx.scope.store.scope(`${config.statPrefix}.http_local_rate_limit`);
    const stats = {
      enabled: scope.counter('enabled'),
      ok: scope.counter('ok'),
      rateLimited: scope.counter('rate_limited'),
      enforced: scope.counter('enforced'),
    };
    const on = (fraction: RuntimeFraction | null) =>
      fraction !== null && fractionEnabled(fraction, ctx.runtime, randomDraw());
    return () => ({
      decodeHeaders(stream: FilterStream): FilterStatus {
        if (!on(config.enabled)) return CONTINUE;
        stats.enabled.inc();
        if (bucket === null || bucket.consume()) {
          stats.ok.inc();
          return CONTINUE;
        }
        stats.rateLimited.inc();
        if (!on(config.enforced)) {
          addHeaders(stream.req.headers, config.requestHeadersWhenNotEnforced);
          return CONTINUE;
        }
        stats.enforced.inc();
        stream.info.flags |= FLAG.RL;
        const headers: string[] = [];
        addHeaders(headers, config.responseHeaders);
        stream.sendLocalReply(config.status, 'local_rate_limited', headers);
        return STOP_ITERATION;
      },
    });
  },
};
