import type { JsonObject } from '../../../events/config.js';
import { parseDuration } from '../../bootstrap/duration.js';
import { fieldPath, type Report } from '../../bootstrap/report.js';

/**
 * The downstream timeouts of one HTTP connection manager, in milliseconds, with the
 * reference's defaults. 0 means disabled wherever the reference allows disabling.
 */
export interface HcmTimeouts {
  /** `request_timeout`: the whole request must arrive within it (default 0, disabled). */
  requestMs: number;
  /** `stream_idle_timeout`: no request or response bytes on a stream for this long (default 5 min). */
  streamIdleMs: number;
  /** `common_http_protocol_options.idle_timeout`: a connection with no request (default 1 h). */
  connectionIdleMs: number;
  /** `common_http_protocol_options.max_connection_duration` (default 0, none). */
  maxConnectionDurationMs: number;
  /** `common_http_protocol_options.max_stream_duration`: a request's whole life, 408 or reset after (default 0, none). */
  maxStreamDurationMs: number;
  /** `delayed_close_timeout`: how long a closing connection waits for the peer (default 1 s). */
  delayedCloseMs: number;
  /**
   * `request_headers_timeout` (a v3 field, read in v2 configs too): the request head must
   * arrive within it (default 0, disabled); without it the head deadline below still applies
   * through `stream_idle_timeout`.
   */
  requestHeadersMs: number;
  /**
   * The time a request head may take from its first byte: `request_headers_timeout` when set,
   * else `stream_idle_timeout`, so a head dripped a byte at a time cannot hold a connection
   * for ever. 0 when both are disabled.
   */
  headDeadlineMs: number;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** Milliseconds of an optional Duration field; reports and falls back when malformed or negative. */
export function durationField(value: unknown, fallback: number, path: string, report: Report): number {
  if (value === undefined || value === null) return fallback;
  const parts = typeof value === 'string' ? parseDuration(value) : undefined;
  if (!parts) {
    report.error(path, `expected a duration like "5s", got ${JSON.stringify(value)}`);
    return fallback;
  }
  if (parts.negative) {
    report.error(path, 'must not be negative');
    return fallback;
  }
  // Timers fire at millisecond granularity; a positive duration under 1 ms is 1 ms, not "disabled".
  const ms = Number(parts.seconds) * 1000 + Math.ceil(parts.nanos / 1e6);
  if (!Number.isSafeInteger(ms) || ms > 2 ** 31 - 1) {
    report.error(path, 'is too large (at most 24 days)');
    return fallback;
  }
  return ms;
}

/**
 * `RouteAction.idle_timeout` in milliseconds: null when the route sets none (the HCM's
 * `stream_idle_timeout` applies), 0 when it disables the stream's idle timeout, else the
 * value that replaces the HCM's for requests on that route.
 */
export function compileRouteIdleTimeout(value: unknown, path: string, report: Report): number | null {
  return value === undefined || value === null ? null : durationField(value, 0, path, report);
}

function objectAt(value: unknown): JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as JsonObject) : {};
}

/**
 * Reads the HCM timeouts from its canonical typed_config. `path` is the field path of that
 * config (`...filters[0].typed_config`), prefixed to every finding.
 */
export function compileHcmTimeouts(config: JsonObject, path: string, report: Report): HcmTimeouts {
  const at = (field: string) => fieldPath(path, field);
  const common = objectAt(config.common_http_protocol_options);
  const commonPath = at('common_http_protocol_options');
  let connectionIdleMs = durationField(
    common.idle_timeout,
    HOUR,
    fieldPath(commonPath, 'idle_timeout'),
    report,
  );
  if (common.idle_timeout === undefined && config.idle_timeout !== undefined) {
    // The deprecated v2 field, honoured when the common option is absent.
    connectionIdleMs = durationField(config.idle_timeout, HOUR, at('idle_timeout'), report);
    report.warn(at('idle_timeout'), 'deprecated: use common_http_protocol_options.idle_timeout');
  }
  const streamIdleMs = durationField(
    config.stream_idle_timeout,
    5 * MINUTE,
    at('stream_idle_timeout'),
    report,
  );
  const requestHeadersMs = durationField(
    config.request_headers_timeout,
    0,
    at('request_headers_timeout'),
    report,
  );
  return {
    requestMs: durationField(config.request_timeout, 0, at('request_timeout'), report),
    streamIdleMs,
    connectionIdleMs,
    maxConnectionDurationMs: durationField(
      common.max_connection_duration,
      0,
      fieldPath(commonPath, 'max_connection_duration'),
      report,
    ),
    maxStreamDurationMs: durationField(
      common.max_stream_duration,
      0,
      fieldPath(commonPath, 'max_stream_duration'),
      report,
    ),
    delayedCloseMs: durationField(config.delayed_close_timeout, 1000, at('delayed_close_timeout'), report),
    requestHeadersMs,
    headDeadlineMs: requestHeadersMs > 0 ? requestHeadersMs : streamIdleMs,
  };
}
