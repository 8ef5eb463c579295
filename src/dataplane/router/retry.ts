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

const FLAGS: Record<string, number> = {
  '5xx': RETRY_5XX,
  'gateway-error': RETRY_GATEWAY,
  'connect-failure': RETRY_CONNECT_FAILURE,
  reset: RETRY_RESET,
  'retriable-4xx': RETRY_4XX,
  'retriable-status-codes': RETRY_STATUS_CODES,
  'refused-stream': RETRY_REFUSED_STREAM,
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
    const flag = FLAGS[token];
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
