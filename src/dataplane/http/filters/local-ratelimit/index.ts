/**
 * `envoy.filters.http.local_ratelimit`: token buckets over a connection manager's requests,
 * kept in this process (no rate limit service): the filter's, a route's or virtual host's own
 * (`typed_per_filter_config`), and those of its `descriptors`, which the route's `rate_limits`
 * actions pick. A request a bucket refuses is answered with `status` (429) and
 * `local_rate_limited`, unless the filter only counts (`filter_enforced`). See
 * docs/http-filters.md.
 */
import type { Scope } from '../../../../stats/store.js';
import { FLAG } from '../../../access-log/stream-info.js';
import { removeHeader } from '../../../codec/request.js';
import { GRPC_RESOURCE_EXHAUSTED } from '../../grpc.js';
import type { TokenBucket } from '../../../network-filters/local-ratelimit/bucket.js';
import { fractionEnabled, type RuntimeFraction, randomDraw } from '../../runtime-fraction.js';
import {
  CONTINUE,
  type FilterContext,
  type FilterStatus,
  type FilterStream,
  type HttpFilterFactory,
  STOP_ITERATION,
} from '../api.js';
import { requestDescriptors } from '../ratelimit/route-policy.js';
import {
  CONFIG_TYPE,
  compileLocalRateLimit,
  FIELD_TABLES,
  type LiteralHeader,
  LOCAL_RATELIMIT_PROTO,
  type LocalRateLimitConfig,
} from './config.js';
import { LocalLimiter } from './limiter.js';

/** Adds `add` to flat `headers`, replacing same-named ones unless appending. */
function addHeaders(headers: string[], add: readonly LiteralHeader[]): void {
  for (const h of add) {
    if (!h.append) removeHeader(headers, h.name);
    headers.push(h.name, h.value);
  }
}

/** One config's buckets and its counters, under `<stat_prefix>.http_local_rate_limit.` (root, as the reference). */
interface Limits {
  config: LocalRateLimitConfig;
  limiter: LocalLimiter;
  /** `local_rate_limit_per_downstream_connection`: each connection's own buckets, made on its first request. */
  perConnection: WeakMap<object, LocalLimiter> | null;
  enabled: ReturnType<Scope['counter']>;
  ok: ReturnType<Scope['counter']>;
  rateLimited: ReturnType<Scope['counter']>;
  enforced: ReturnType<Scope['counter']>;
}

/**
 * The limits of `config` for one connection manager. The buckets are the process's, as the
 * reference's are shared by its workers: every data-plane thread building this config on this
 * listener and connection manager takes from the same tokens (docs/http-filters.md).
 */
function limitsOf(config: LocalRateLimitConfig, ctx: FilterContext): Limits {
  const key = `http.local_ratelimit\0${ctx.listenerName}\0${ctx.scope.prefix}\0${JSON.stringify(config)}`;
  const scope = ctx.scope.store.scope(`${config.statPrefix}.http_local_rate_limit`);
  return {
    config,
    limiter: new LocalLimiter(config, key),
    perConnection: config.perConnection ? new WeakMap() : null,
    enabled: scope.counter('enabled'),
    ok: scope.counter('ok'),
    rateLimited: scope.counter('rate_limited'),
    enforced: scope.counter('enforced'),
  };
}

/** The limiter a request takes from: the process's, or its connection's own. */
function limiterOf(limits: Limits, stream: FilterStream): LocalLimiter {
  const connection = stream.req.connection;
  if (limits.perConnection === null || connection === undefined) return limits.limiter;
  let limiter = limits.perConnection.get(connection);
  if (limiter === undefined) {
    limiter = new LocalLimiter(limits.config, '', false);
    limits.perConnection.set(connection, limiter);
  }
  return limiter;
}

/** The draft RateLimit headers (`enable_x_ratelimit_headers: DRAFT_VERSION_03`) of a bucket now. */
function rateLimitHeaders(headers: string[], bucket: TokenBucket): void {
  const { tokens, msToNext } = bucket.level();
  headers.push(
    'x-ratelimit-limit',
    String(bucket.maxTokens),
    'x-ratelimit-remaining',
    String(tokens),
    // Whole seconds until the next token, as the reference's (its milliseconds divided down).
    'x-ratelimit-reset',
    String(Math.floor(msToNext / 1000)),
  );
}

export const localRateLimitFactory: HttpFilterFactory<LocalRateLimitConfig> = {
  name: 'envoy.filters.http.local_ratelimit',
  configType: CONFIG_TYPE,
  typeAliases: { 'envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit': CONFIG_TYPE },
  schema: { source: LOCAL_RATELIMIT_PROTO },
  fieldTables: FIELD_TABLES,
  compile: (raw, path, report) => compileLocalRateLimit(raw, path, report),
  /** A route's or virtual host's own config, with its own buckets (the reference: "unique to that route"). */
  perRoute: (raw, path, report) => compileLocalRateLimit(raw, path, report, path),
  start(config, ctx) {
    const own = limitsOf(config, ctx);
    // A route's config gets its buckets the first time one of its requests comes here.
    const routes = new WeakMap<LocalRateLimitConfig, Limits>();
    const limitsFor = (stream: FilterStream): Limits => {
      const route = stream.perRoute(CONFIG_TYPE) as LocalRateLimitConfig | undefined;
      if (route === undefined) return own;
      let limits = routes.get(route);
      if (limits === undefined) {
        limits = limitsOf(route, ctx);
        routes.set(route, limits);
      }
      return limits;
    };
    const on = (fraction: RuntimeFraction | null) =>
      fraction !== null && fractionEnabled(fraction, ctx.runtime, randomDraw());
    return () => {
      let described: TokenBucket | null = null;
      return {
        decodeHeaders(stream: FilterStream): FilterStatus {
          const limits = limitsFor(stream);
          const cfg = limits.config;
          if (!on(cfg.enabled)) return CONTINUE;
          limits.enabled.inc();
          const request =
            cfg.descriptors.length === 0
              ? []
              : requestDescriptors(stream, cfg.stage, cfg.vhRateLimits, ctx.localCluster);
          const verdict = limiterOf(limits, stream).decide(request);
          if (cfg.rateLimitHeaders) described = verdict.bucket;
          if (verdict.allowed) {
            limits.ok.inc();
            return CONTINUE;
          }
          limits.rateLimited.inc();
          if (!on(cfg.enforced)) {
            addHeaders(stream.req.headers, cfg.requestHeadersWhenNotEnforced);
            return CONTINUE;
          }
          limits.enforced.inc();
          stream.info.flags |= FLAG.RL;
          stream.info.details = 'local_rate_limited';
          const headers: string[] = [];
          addHeaders(headers, cfg.responseHeaders);
          stream.sendLocalReply(
            cfg.status,
            'local_rate_limited',
            headers,
            cfg.resourceExhausted ? GRPC_RESOURCE_EXHAUSTED : undefined,
          );
          return STOP_ITERATION;
        },
        encodeHeaders(_status: number, headers: string[]): FilterStatus {
          if (described !== null) rateLimitHeaders(headers, described);
          return CONTINUE;
        },
      };
    };
  },
};
