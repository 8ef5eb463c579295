import type { JsonObject } from '../../../events/config.js';
import { durationMs, numberOr } from '../../../reducers/settings/values.js';
import { fault } from '../../bootstrap/report.js';

/** `retry_on` conditions as bit flags, tested per attempt outcome. */
export const RETRY_5XX = 1;
export const RETRY_GATEWAY = 2;
export const RETRY_CONNECT_FAILURE = 4;
export const RETRY_RESET = 8;
export const RETRY_4XX = 16;
export const RETRY_STATUS_CODES = 32;
export const RETRY_REFUSED_STREAM = 64;
// gRPC conditions: the `grpc-status` of a response's headers (a trailers-only answer).
export const RETRY_GRPC_CANCELLED = 128;
export const RETRY_GRPC_DEADLINE_EXCEEDED = 256;
export const RETRY_GRPC_RESOURCE_EXHAUSTED = 512;
export const RETRY_GRPC_UNAVAILABLE = 1024;
export const RETRY_GRPC_INTERNAL = 2048;
const RETRY_GRPC =
  RETRY_GRPC_CANCELLED |
  RETRY_GRPC_DEADLINE_EXCEEDED |
  RETRY_GRPC_RESOURCE_EXHAUSTED |
  RETRY_GRPC_UNAVAILABLE |
  RETRY_GRPC_INTERNAL;

/** `retry_on` names of HTTP conditions (also what `x-proxy-retry-on` takes). */
const HTTP_FLAGS: Record<string, number> = {
  '5xx': RETRY_5XX,
  'gateway-error': RETRY_GATEWAY,
  'connect-failure': RETRY_CONNECT_FAILURE,
  reset: RETRY_RESET,
  'retriable-4xx': RETRY_4XX,
  'retriable-status-codes': RETRY_STATUS_CODES,
  'refused-stream': RETRY_REFUSED_STREAM,
};

/** `retry_on` names of gRPC conditions (also what `x-proxy-retry-grpc-on` takes). */
const GRPC_FLAGS: Record<string, number> = {
  cancelled: RETRY_GRPC_CANCELLED,
  'deadline-exceeded': RETRY_GRPC_DEADLINE_EXCEEDED,
  'resource-exhausted': RETRY_GRPC_RESOURCE_EXHAUSTED,
  unavailable: RETRY_GRPC_UNAVAILABLE,
  internal: RETRY_GRPC_INTERNAL,
};

const FLAGS: Record<string, number> = { ...HTTP_FLAGS, ...GRPC_FLAGS };

/** The `grpc-status` code each gRPC condition retries. */
const GRPC_STATUS_FLAG: Record<string, number> = {
  '1': RETRY_GRPC_CANCELLED,
  '4': RETRY_GRPC_DEADLINE_EXCEEDED,
  '8': RETRY_GRPC_RESOURCE_EXHAUSTED,
  '14': RETRY_GRPC_UNAVAILABLE,
  '13': RETRY_GRPC_INTERNAL,
};

/** A route's `retry_policy` in data plane units. */
export interface RetryPolicy {
  on: number;
  numRetries: number;
  /** 0: each try is bounded by the route timeout only. */
  perTryTimeoutMs: number;
  statusCodes: Set<number>;
  baseIntervalMs: number;
  maxIntervalMs: number;
}

/** Compiles a `RetryPolicy`; unknown `retry_on` names are an error naming the token. */
export function compileRetryPolicy(raw: JsonObject, where: string): RetryPolicy {
  let on = 0;
  const tokens = typeof raw.retry_on === 'string' ? raw.retry_on.split(',') : [];
  for (const t of tokens) {
    const token = t.trim();
    if (!token) continue;
    const flag = Object.hasOwn(FLAGS, token) ? FLAGS[token] : undefined;
    if (flag === undefined)
      throw fault(
        `${where}.retry_on`,
        `unknown condition '${token}' (known: ${Object.keys(FLAGS).join(', ')})`,
      );
    on |= flag;
  }
  const backOff =
    raw.retry_back_off !== undefined && typeof raw.retry_back_off === 'object'
      ? (raw.retry_back_off as JsonObject)
      : {};
  const baseIntervalMs = durationMs(backOff.base_interval, 25);
  return {
    on,
    numRetries: numberOr(raw.num_retries, 1),
    perTryTimeoutMs: durationMs(raw.per_try_timeout, 0),
    statusCodes: new Set(
      (Array.isArray(raw.retriable_status_codes) ? raw.retriable_status_codes : []).map(Number),
    ),
    baseIntervalMs,
    maxIntervalMs: durationMs(backOff.max_interval, baseIntervalMs * 10),
  };
}

/** Whether a response status is worth another try under the policy. */
export function retriableStatus(policy: RetryPolicy, status: number): boolean {
  if (status >= 500 && policy.on & RETRY_5XX) return true;
  if ((status === 502 || status === 503 || status === 504) && policy.on & RETRY_GATEWAY) return true;
  if (status === 409 && policy.on & RETRY_4XX) return true;
  return (policy.on & RETRY_STATUS_CODES) !== 0 && policy.statusCodes.has(status);
}

/**
 * The conditions a request header names (`x-proxy-retry-on` with `grpc` false,
 * `x-proxy-retry-grpc-on` with it true): comma-separated, unknown names ignored, as the
 * reference reads them.
 */
export function retryOnHeader(value: string, grpc: boolean): number {
  const table = grpc ? GRPC_FLAGS : HTTP_FLAGS;
  let on = 0;
  for (const t of value.split(',')) {
    const token = t.trim();
    if (Object.hasOwn(table, token)) on |= table[token] as number;
  }
  return on;
}

/** Whether every condition a retry header names is known (`strict_check_headers`). */
export function retryOnHeaderValid(value: string, grpc: boolean): boolean {
  const table = grpc ? GRPC_FLAGS : HTTP_FLAGS;
  return value.split(',').every((t) => Object.hasOwn(table, t.trim()));
}

/** Whether a response's headers carry a `grpc-status` the policy retries. */
export function retriableGrpc(policy: RetryPolicy, headers: readonly string[]): boolean {
  if ((policy.on & RETRY_GRPC) === 0) return false;
  for (let i = 0; i < headers.length; i += 2)
    if (headers[i] === 'grpc-status') {
      const code = headers[i + 1] as string;
      return Object.hasOwn(GRPC_STATUS_FLAG, code) && (policy.on & (GRPC_STATUS_FLAG[code] as number)) !== 0;
    }
  return false;
}

/** RFC 9110 9.2.2's idempotent methods: the only ones a proxy may send again on its own. */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);

/** Whether `method` may be sent again without a retry policy asking (RFC 9110 9.2.2). */
export function idempotentMethod(method: string): boolean {
  return IDEMPOTENT.has(method);
}

/** Whether a failure before response headers is worth another try. */
export function retriableFailure(policy: RetryPolicy, connectFailure: boolean): boolean {
  if (policy.on & (RETRY_5XX | RETRY_GATEWAY)) return true;
  if (connectFailure) return (policy.on & RETRY_CONNECT_FAILURE) !== 0 || (policy.on & RETRY_RESET) !== 0;
  return (policy.on & RETRY_RESET) !== 0;
}

/** Jittered exponential back-off before retry `n` (1-based), as the reference computes it. */
export function backOffMs(policy: RetryPolicy, n: number): number {
  const ceiling = Math.min(policy.baseIntervalMs * (2 ** n - 1), policy.maxIntervalMs);
  return Math.floor(Math.random() * ceiling);
}
