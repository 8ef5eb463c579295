import type { Counters } from '../../../../stats/store.js';
import { FLAG } from '../../../access-log/stream-info.js';
import { textToHead } from '../../../codec/head-text.js';
import { headerValue, INTERNAL_HEADER } from '../../../codec/request.js';
import {
  CONTINUE,
  type FilterContext,
  type FilterStatus,
  type FilterStream,
  type HttpFilterFactory,
  STOP_ITERATION,
  type StreamFilter,
} from '../api.js';
import { GRPC_RESOURCE_EXHAUSTED } from '../../grpc.js';
import type { ClusterCall } from '../cluster-call.js';
import { perClusterStats } from '../cluster-stats.js';
import { type GrpcCallResult, grpcUnary } from '../grpc-call.js';
import { compileRateLimit, RATE_LIMIT_FIELD_TABLES, type RateLimitConfig } from './config.js';
import { requestDescriptors } from './route-policy.js';

const CONFIG_TYPE = 'envoy.config.filter.http.rate_limit.v2.RateLimit';

/** The filter's counters, under `cluster.<route's cluster>.ratelimit.`, as the reference. */
const RATE_LIMIT_COUNTERS = {
  ok: 'ok',
  overLimit: 'over_limit',
  error: 'error',
  failureModeAllowed: 'failure_mode_allowed',
};
type RateLimitStats = Counters<typeof RATE_LIMIT_COUNTERS>;

/** `HeaderValue`s of a decoded answer, flat, names lowercase; values with CR, LF or NUL dropped. */
function headerValues(list: unknown): string[] {
  const out: string[] = [];
  for (const h of Array.isArray(list) ? list : []) {
    const key = String((h as { key?: unknown }).key ?? '').toLowerCase();
    const value = String((h as { value?: unknown }).value ?? '');
    // The message's text goes into the head as its UTF-8 bytes.
    if (/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(key) && !/[\r\n\0]/.test(value)) out.push(key, textToHead(value));
  }
  return out;
}

/** A rate limit unit's window in seconds; 0 for one the headers do not describe. */
const WINDOW_SECONDS: Record<string, number> = {
  SECOND: 1,
  MINUTE: 60,
  HOUR: 3600,
  DAY: 86_400,
  WEEK: 604_800,
  MONTH: 2_592_000,
  YEAR: 31_536_000,
};

interface DescriptorStatus {
  current_limit?: { requests_per_unit?: number; unit?: string; name?: string } | null;
  limit_remaining?: number;
  duration_until_reset?: { seconds?: number } | null;
}

/**
 * The draft RateLimit headers of an answer's `statuses`, as the reference builds them: the
 * status with the fewest requests remaining gives the limit, the remaining and the reset; each
 * status with a limit adds its quota policy (`, 10;w=60;name="per-ip"`). Null when none has a limit.
 */
function draftRateLimitHeaders(statuses: readonly DescriptorStatus[]): string[] | null {
  let min: DescriptorStatus | null = null;
  let policy = '';
  for (const status of statuses) {
    const limit = status.current_limit;
    if (limit == null) continue;
    if (min === null || (status.limit_remaining ?? 0) < (min.limit_remaining ?? 0)) min = status;
    const window = WINDOW_SECONDS[limit.unit ?? ''] ?? 0;
    if (window === 0) continue;
    policy += `, ${limit.requests_per_unit ?? 0};w=${window}`;
    if (limit.name) policy += `;name="${limit.name}"`;
  }
  if (min === null) return null;
  return [
    'x-ratelimit-limit',
    `${min.current_limit?.requests_per_unit ?? 0}${policy}`,
    'x-ratelimit-remaining',
    String(min.limit_remaining ?? 0),
    'x-ratelimit-reset',
    String(Math.trunc(Number(min.duration_until_reset?.seconds ?? 0))),
  ];
}

/** One request's rate limit check: asks the service, holds the request until it answers. */
class RateLimitFilter implements StreamFilter {
  private call: ClusterCall | null = null;
  /** The draft RateLimit headers the response gets (`enable_x_ratelimit_headers`). */
  private rateLimitHeaders: string[] | null = null;

  constructor(
    private readonly config: RateLimitConfig,
    private readonly ctx: FilterContext,
    private readonly stats: (cluster: string | null) => RateLimitStats | null,
  ) {}

  decodeHeaders(stream: FilterStream): FilterStatus {
    const config = this.config;
    if (config.requestType !== 'both') {
      const internal = headerValue(stream.req, INTERNAL_HEADER) === 'true';
      if (internal !== (config.requestType === 'internal')) return CONTINUE;
    }
    // The reference's filter of this era adds its virtual host's only when the route includes them.
    const list = requestDescriptors(stream, config.stage, 'IGNORE', this.ctx.localCluster);
    if (list.length === 0) return CONTINUE;
    this.call = grpcUnary(
      this.ctx.clusters,
      {
        cluster: config.service.cluster,
        path: config.path,
        requestType: 'envoy.service.ratelimit.v2.RateLimitRequest',
        responseType: 'envoy.service.ratelimit.v2.RateLimitResponse',
        timeoutMs: config.timeoutMs,
        metadata: config.service.metadata,
      },
      {
        domain: config.domain,
        descriptors: list.map((d) => ({ entries: d.map(([key, value]) => ({ key, value })) })),
      },
      (result) => {
        this.call = null;
        this.act(stream, result);
      },
    );
    return STOP_ITERATION;
  }

  onDestroy(): void {
    this.call?.cancel();
    this.call = null;
  }

  encodeHeaders(_status: number, headers: string[]): FilterStatus {
    if (this.rateLimitHeaders !== null) headers.push(...this.rateLimitHeaders);
    return CONTINUE;
  }

  private act(stream: FilterStream, result: GrpcCallResult): void {
    if (stream.ended) return;
    const stats = this.stats(stream.routeCluster);
    const code = result.ok ? result.message.overall_code : 'UNKNOWN';
    // On the answer's 200 and its 429 alike; not on a failure's 500, as the reference.
    if (result.ok && this.config.rateLimitHeaders && (code === 'OK' || code === 'OVER_LIMIT'))
      this.rateLimitHeaders = draftRateLimitHeaders((result.message.statuses ?? []) as DescriptorStatus[]);
    if (result.ok && code === 'OK') {
      stats?.ok.inc();
      stream.req.headers.push(...headerValues(result.message.request_headers_to_add));
      stream.continueDecoding();
      return;
    }
    if (result.ok && code === 'OVER_LIMIT') {
      stats?.overLimit.inc();
      stream.info.flags |= FLAG.RL;
      stream.info.details = 'request_rate_limited';
      const headers = headerValues(result.message.headers);
      if (this.config.ratelimitedHeader) headers.push('x-proxy-ratelimited', 'true');
      stream.sendLocalReply(
        429,
        '',
        headers,
        this.config.resourceExhausted ? GRPC_RESOURCE_EXHAUSTED : undefined,
      );
      return;
    }
    stats?.error.inc();
    if (this.config.failureModeDeny) {
      stream.info.flags |= FLAG.RLSE;
      stream.info.details = 'rate_limiter_error';
      stream.sendLocalReply(500, '');
      return;
    }
    stats?.failureModeAllowed.inc();
    stream.continueDecoding();
  }
}

/** `envoy.filters.http.ratelimit`: asks a rate limit service about each request's descriptors (docs/http-filters.md). */
export const rateLimitFactory: HttpFilterFactory<RateLimitConfig> = {
  name: 'envoy.filters.http.ratelimit',
  aliases: ['envoy.rate_limit'],
  configType: CONFIG_TYPE,
  typeAliases: { 'envoy.extensions.filters.http.ratelimit.v3.RateLimit': CONFIG_TYPE },
  schema: { file: 'envoy/config/filter/http/rate_limit/v2.proto' },
  fieldTables: RATE_LIMIT_FIELD_TABLES,
  compile: compileRateLimit,
  start(config, ctx) {
    const stats = perClusterStats(ctx.clusters, 'ratelimit', (scope) => scope.counters(RATE_LIMIT_COUNTERS));
    return () => new RateLimitFilter(config, ctx, stats);
  },
};
