import { type RetryPolicy, retryOnHeader, retryOnHeaderValid } from './retry.js';

/**
 * What an internal request's control headers change for its routing, as the reference's
 * router reads them (the edge step already removed them from any other request: see
 * docs/edge.md). Each name is read in both spellings, `x-proxy-` and the reference's
 * `x-envoy-`.
 */
export interface RequestControls {
  retry: RetryPolicy | null;
  /** The whole request's timeout; 0 for none. */
  timeoutMs: number;
  /** Each attempt's timeout; 0 for none. */
  perTryMs: number;
  /** The status a timeout answers: 504, or 204 with `upstream-rq-timeout-alt-response`. */
  timeoutStatus: number;
}

/** The suffixes this reads, after `x-proxy-` or `x-envoy-`. */
const RETRY_ON = 'retry-on';
const RETRY_GRPC_ON = 'retry-grpc-on';
const MAX_RETRIES = 'max-retries';
const RETRIABLE_STATUS_CODES = 'retriable-status-codes';
const TIMEOUT = 'upstream-rq-timeout-ms';
const PER_TRY_TIMEOUT = 'upstream-rq-per-try-timeout-ms';
const ALT_RESPONSE = 'upstream-rq-timeout-alt-response';
const EXPECTED_TIMEOUT = 'expected-rq-timeout-ms';

const READ = new Set([
  RETRY_ON,
  RETRY_GRPC_ON,
  MAX_RETRIES,
  RETRIABLE_STATUS_CODES,
  TIMEOUT,
  PER_TRY_TIMEOUT,
  ALT_RESPONSE,
  EXPECTED_TIMEOUT,
]);

/** A decimal integer as the reference's `SimpleAtoi` reads it (surrounding spaces allowed); null otherwise. */
function uint(value: string | undefined): number | null {
  if (value === undefined) return null;
  const t = value.trim();
  if (t === '') return null;
  for (let i = 0; i < t.length; i++) {
    const c = t.charCodeAt(i);
    if (c < 48 || c > 57) return null;
  }
  const n = Number(t);
  return Number.isSafeInteger(n) ? n : null;
}

/**
 * The control headers of `headers` by suffix (first value of either spelling), removed from
 * `headers`; an expected timeout only when `dropExpected` (the router then sets its own).
 */
function takeControls(headers: string[], dropExpected: boolean): Map<string, string> {
  const found = new Map<string, string>();
  let w = 0;
  for (let r = 0; r < headers.length; r += 2) {
    const name = headers[r] as string;
    const value = headers[r + 1] as string;
    const suffix = name.startsWith('x-proxy-') || name.startsWith('x-envoy-') ? name.slice(8) : '';
    if (READ.has(suffix)) {
      if (!found.has(suffix)) found.set(suffix, value);
      if (suffix !== EXPECTED_TIMEOUT || dropExpected) continue;
    }
    headers[w] = name;
    headers[w + 1] = value;
    w += 2;
  }
  headers.length = w;
  return found;
}

/** The headers the router's `strict_check_headers` may name (suffixes after `x-envoy-` / `x-proxy-`). */
export const STRICT_CHECKABLE = [TIMEOUT, PER_TRY_TIMEOUT, MAX_RETRIES, RETRY_ON, RETRY_GRPC_ON] as const;

/**
 * `strict_check_headers`: the first of the `checked` headers (suffixes of `STRICT_CHECKABLE`)
 * whose value the router would not read: a number that is not digits, a retry condition it
 * does not know. Null when all are valid; the router then answers 400 naming it.
 */
export function strictCheckFailure(
  headers: readonly string[],
  checked: readonly string[],
): [name: string, value: string] | null {
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    const suffix = name.startsWith('x-proxy-') || name.startsWith('x-envoy-') ? name.slice(8) : '';
    if (!checked.includes(suffix)) continue;
    const value = headers[i + 1] as string;
    const valid =
      suffix === RETRY_ON || suffix === RETRY_GRPC_ON
        ? retryOnHeaderValid(value, suffix === RETRY_GRPC_ON)
        : uint(value) !== null;
    if (!valid) return [name, value];
  }
  return null;
}

/**
 * Reads (and removes from `headers`) an internal request's control headers, as the
 * reference's router (the expected timeout is kept when `suppressEnvoyHeaders`, as the router
 * then sets none): `upstream-rq-timeout-ms` replaces the route timeout (with
 * `respectExpected`, an `expected-rq-timeout-ms` set by the proxy in front wins),
 * `upstream-rq-per-try-timeout-ms` the per-try timeout; `retry-on` and `retry-grpc-on` add
 * conditions to the route's policy (an absent policy: one retry by default),
 * `max-retries` then sets the count, `retriable-status-codes` adds codes.
 * Only called when the edge step saw one of these on an internal request.
 */
export function readRequestControls(
  headers: string[],
  routeRetry: RetryPolicy | null,
  routeTimeoutMs: number,
  router: { respectExpectedRqTimeout: boolean; suppressEnvoyHeaders: boolean },
): RequestControls {
  const c = takeControls(headers, !router.suppressEnvoyHeaders);
  const respectExpected = router.respectExpectedRqTimeout;
  let timeoutMs = routeTimeoutMs;
  const expected = respectExpected ? uint(c.get(EXPECTED_TIMEOUT)) : null;
  const header = expected ?? uint(c.get(TIMEOUT));
  if (header !== null) timeoutMs = header;
  const perTryHeader = uint(c.get(PER_TRY_TIMEOUT));
  const perTryMs = perTryHeader ?? routeRetry?.perTryTimeoutMs ?? 0;
  let retry = routeRetry;
  const retryOn = c.get(RETRY_ON);
  const grpcOn = c.get(RETRY_GRPC_ON);
  const codes = c.get(RETRIABLE_STATUS_CODES);
  if (retryOn !== undefined || grpcOn !== undefined || codes !== undefined || perTryHeader !== null) {
    const on =
      (routeRetry?.on ?? 0) |
      (retryOn === undefined ? 0 : retryOnHeader(retryOn, false)) |
      (grpcOn === undefined ? 0 : retryOnHeader(grpcOn, true));
    const maxRetries = on === 0 ? null : uint(c.get(MAX_RETRIES));
    const statusCodes = new Set(routeRetry?.statusCodes);
    for (const code of codes?.split(',') ?? []) {
      const n = uint(code);
      if (n !== null) statusCodes.add(n);
    }
    retry =
      on === 0 && routeRetry === null
        ? null
        : {
            on,
            numRetries: maxRetries ?? routeRetry?.numRetries ?? 1,
            perTryTimeoutMs: perTryMs,
            statusCodes,
            baseIntervalMs: routeRetry?.baseIntervalMs ?? 25,
            maxIntervalMs: routeRetry?.maxIntervalMs ?? 250,
          };
  } else if (routeRetry !== null && c.has(MAX_RETRIES) && routeRetry.on !== 0) {
    const maxRetries = uint(c.get(MAX_RETRIES));
    if (maxRetries !== null) retry = { ...routeRetry, numRetries: maxRetries };
  }
  return {
    retry,
    timeoutMs,
    perTryMs,
    timeoutStatus: c.has(ALT_RESPONSE) ? 204 : 504,
  };
}
