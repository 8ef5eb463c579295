/**
 * `envoy.filters.network.local_ratelimit`: a token bucket over a chain's new connections; one
 * that finds it empty is closed before the next filter sees it and counted in
 * `local_ratelimit.<stat_prefix>.rate_limited`. See docs/data-plane.md.
 */
import type { JsonObject } from '../../../../events/config.js';
import { runtimeValue } from '../../../../reducers/runtime.js';
import { durationMs, numberOr, objectOf } from '../../../../reducers/settings/values.js';
import { acting, checkFields } from '../../../bootstrap/honoured.js';
import type { Report } from '../../../bootstrap/report.js';
import type { ReadFilterFactory } from '../api.js';
import { TokenBucket, type TokenBucketSpec } from './bucket.js';

export interface LocalRateLimitSpec {
  statPrefix: string;
  bucket: TokenBucketSpec;
  /** `runtime_enabled`: the runtime key that switches it and its value when unset; null: always on. */
  enabled: { key: string; byDefault: boolean } | null;
}

const FIELD_TABLES = {
  LocalRateLimit: acting('stat_prefix', 'token_bucket', 'runtime_enabled'),
  TokenBucket: acting('max_tokens', 'tokens_per_fill', 'fill_interval'),
  RuntimeFeatureFlag: acting('default_value', 'runtime_key'),
};

/** The reference refuses a shorter fill interval (its fill timer's floor). */
const MIN_FILL_INTERVAL_MS = 50;

function compile(raw: JsonObject, path: string, report: Report): LocalRateLimitSpec {
  checkFields(raw, path, report, FIELD_TABLES.LocalRateLimit, 'LocalRateLimit');
  const statPrefix = typeof raw.stat_prefix === 'string' ? raw.stat_prefix : '';
  if (statPrefix === '') report.error(`${path}.stat_prefix`, 'required field missing', 'missing');
  const bp = `${path}.token_bucket`;
  const bucket = objectOf(raw.token_bucket);
  if (raw.token_bucket === undefined) report.error(bp, 'required field missing', 'missing');
  else checkFields(bucket, bp, report, FIELD_TABLES.TokenBucket, 'TokenBucket');
  const maxTokens = numberOr(bucket.max_tokens, 0);
  if (raw.token_bucket !== undefined && maxTokens <= 0)
    report.error(`${bp}.max_tokens`, 'must be greater than 0');
  const tokensPerFill = numberOr(bucket.tokens_per_fill, 1);
  if (tokensPerFill <= 0) report.error(`${bp}.tokens_per_fill`, 'must be greater than 0');
  const fillIntervalMs = durationMs(bucket.fill_interval, 0);
  if (raw.token_bucket !== undefined && bucket.fill_interval === undefined)
    report.error(`${bp}.fill_interval`, 'required field missing', 'missing');
  else if (raw.token_bucket !== undefined && fillIntervalMs < MIN_FILL_INTERVAL_MS)
    report.error(`${bp}.fill_interval`, `must be at least ${MIN_FILL_INTERVAL_MS}ms`);
  let enabled: LocalRateLimitSpec['enabled'] = null;
  if (raw.runtime_enabled !== undefined) {
    const fp = `${path}.runtime_enabled`;
    const flag = objectOf(raw.runtime_enabled);
    checkFields(flag, fp, report, FIELD_TABLES.RuntimeFeatureFlag, 'RuntimeFeatureFlag');
    if (flag.default_value === undefined)
      report.error(`${fp}.default_value`, 'required field missing', 'missing');
    if (typeof flag.runtime_key !== 'string' || flag.runtime_key === '')
      report.error(`${fp}.runtime_key`, 'required field missing', 'missing');
    enabled = { key: String(flag.runtime_key ?? ''), byDefault: flag.default_value === true };
  }
  return { statPrefix, bucket: { maxTokens, tokensPerFill, fillIntervalMs }, enabled };
}

/** A runtime value as the reference's `getBoolean` reads it: `true` or `false`, else the default. */
function flagOn(raw: string | undefined, byDefault: boolean): boolean {
  const value = raw?.trim().toLowerCase();
  return value === 'true' ? true : value === 'false' ? false : byDefault;
}

const V2ALPHA = 'envoy.config.filter.network.local_rate_limit.v2alpha.LocalRateLimit';

/** v2alpha is the message this build reads; v3 renamed its package. */
export const localRateLimitFactory: ReadFilterFactory<LocalRateLimitSpec> = {
  name: 'envoy.filters.network.local_ratelimit',
  configType: V2ALPHA,
  typeAliases: { 'envoy.extensions.filters.network.local_ratelimit.v3.LocalRateLimit': V2ALPHA },
  schema: { file: 'envoy/config/filter/network/local_rate_limit/v2alpha.proto' },
  terminal: false,
  fieldTables: FIELD_TABLES,
  compile,
  /**
   * One bucket per filter config and listener for the whole process, as the reference's is
   * shared by its workers: every data-plane thread takes from the same tokens (docs/data-plane.md).
   */
  start(spec, { ctx, listenerName }) {
    const bucket = new TokenBucket(
      spec.bucket,
      `network.local_ratelimit\0${listenerName}\0${JSON.stringify(spec)}`,
    );
    const rateLimited = ctx.stats.counter(`local_ratelimit.${spec.statPrefix}.rate_limited`);
    const enabled = spec.enabled;
    return {
      onNewConnection(socket, proceed) {
        if (enabled && !flagOn(runtimeValue(ctx.store.state, enabled.key), enabled.byDefault))
          return proceed();
        if (bucket.consume()) return proceed();
        rateLimited.inc();
        socket.destroy();
      },
    };
  },
};
