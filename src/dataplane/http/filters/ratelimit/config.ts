/**
 * The compile step of `envoy.filters.http.ratelimit`: the filter's `RateLimit` (v2, and v3
 * read as v2) and its `rate_limit_service`. Every field acts or is refused by name.
 */
import type { JsonObject } from '../../../../../events/config.js';
import { objectOf } from '../../../../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable } from '../../../../bootstrap/honoured.js';
import type { Report } from '../../../../bootstrap/report.js';
import { durationField } from '../../timeouts.js';
import {
  compileFilterGrpcService,
  FILTER_GRPC_SERVICE_TABLES,
  type FilterGrpcService,
} from '../grpc-call.js';

/** A compiled `RateLimit` filter config. */
export interface RateLimitConfig {
  domain: string;
  stage: number;
  /** Which requests are limited, by whether the edge step found them internal. */
  requestType: 'both' | 'internal' | 'external';
  timeoutMs: number;
  failureModeDeny: boolean;
  /** `x-proxy-ratelimited: true` on a 429 (the reference's `x-envoy-ratelimited`). */
  ratelimitedHeader: boolean;
  /** A limited gRPC request is answered RESOURCE_EXHAUSTED (8), not UNAVAILABLE (14, what 429 maps to). */
  resourceExhausted: boolean;
  /** `enable_x_ratelimit_headers: DRAFT_VERSION_03`: the draft RateLimit headers from the service's statuses. */
  rateLimitHeaders: boolean;
  service: FilterGrpcService;
  /** `/envoy.service.ratelimit.v2.RateLimitService/ShouldRateLimit` or the v3 one. */
  path: string;
}

/** The reference's default `timeout`. */
const DEFAULT_TIMEOUT_MS = 20;

const RATE_LIMIT_FIELDS: FieldTable = {
  ...acting(
    'domain',
    'stage',
    'request_type',
    'timeout',
    'failure_mode_deny',
    'rate_limit_service',
    'disable_x_envoy_ratelimited_header',
    'rate_limited_as_resource_exhausted',
    'enable_x_ratelimit_headers',
  ),
};
const SERVICE_FIELDS: FieldTable = acting('grpc_service', 'transport_api_version');

/** The field tables of the ratelimit filter, by message name. */
export const RATE_LIMIT_FIELD_TABLES: Record<string, FieldTable> = {
  RateLimit: RATE_LIMIT_FIELDS,
  RateLimitServiceConfig: SERVICE_FIELDS,
  ...FILTER_GRPC_SERVICE_TABLES,
};

const REQUEST_TYPES = new Set(['both', 'internal', 'external']);

/** Compiles the filter's `RateLimit`. */
export function compileRateLimit(raw: JsonObject, path: string, report: Report): RateLimitConfig {
  checkFields(raw, path, report, RATE_LIMIT_FIELDS, 'RateLimit');
  const domain = typeof raw.domain === 'string' ? raw.domain : '';
  if (domain === '') report.error(`${path}.domain`, 'required field missing', 'missing');
  const stage = Number(raw.stage ?? 0);
  if (!Number.isInteger(stage) || stage < 0 || stage > 10)
    report.error(`${path}.stage`, 'must be in [0, 10]');
  const requestType =
    typeof raw.request_type === 'string' && raw.request_type !== '' ? raw.request_type : 'both';
  if (!REQUEST_TYPES.has(requestType))
    report.error(
      `${path}.request_type`,
      `must be internal, external or both, got ${JSON.stringify(requestType)}`,
    );
  const servicePath = `${path}.rate_limit_service`;
  const service = objectOf(raw.rate_limit_service);
  if (raw.rate_limit_service === undefined) report.error(servicePath, 'required field missing', 'missing');
  checkFields(service, servicePath, report, SERVICE_FIELDS, 'RateLimitServiceConfig');
  const api = service.transport_api_version === 'V3' ? 'v3' : 'v2';
  return {
    domain,
    stage,
    requestType: requestType as RateLimitConfig['requestType'],
    timeoutMs: durationField(raw.timeout, DEFAULT_TIMEOUT_MS, `${path}.timeout`, report),
    failureModeDeny: raw.failure_mode_deny === true,
    ratelimitedHeader: raw.disable_x_envoy_ratelimited_header !== true,
    resourceExhausted: raw.rate_limited_as_resource_exhausted === true,
    rateLimitHeaders: raw.enable_x_ratelimit_headers === 'DRAFT_VERSION_03',
    service: compileFilterGrpcService(
      objectOf(service.grpc_service),
      `${servicePath}.grpc_service`,
      report,
      0,
    ),
    path: `/envoy.service.ratelimit.${api}.RateLimitService/ShouldRateLimit`,
  };
}
