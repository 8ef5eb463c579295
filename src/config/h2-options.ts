import type { JsonObject } from '../../events/config.js';
import { acting, checkFields, type FieldTable, notYet } from '../bootstrap/honoured.js';
import type { Report } from '../bootstrap/report.js';
import type { KeepaliveOptions } from '../dataplane/codec/h2/keepalive.js';
import { DEFAULT_FLOOD_LIMITS, type FloodLimits } from '../dataplane/codec/h2/limits.js';
import { durationMs, objectOf } from '../../reducers/settings/values.js';

/**
 * `http2_protocol_options` as a `node:http2` session applies it. A field left unset keeps the
 * codec's value rather than the reference's default: the reference's 256 MiB windows would let
 * the peer (a client, or an upstream answering) send that much before the proxy's reading
 * pauses (flow control is what holds a body to the buffer limit here), and its stream limit of 2^31-1 is unlimited as the codec's is.
 */
export interface Http2Options {
  /** Sent in the codec's SETTINGS: `headerTableSize`, `maxConcurrentStreams`, `initialWindowSize`, those set. */
  settings: { headerTableSize?: number; maxConcurrentStreams?: number; initialWindowSize?: number };
  /** `initial_connection_window_size`: the session's receive window; null keeps HTTP/2's 65535. */
  connectionWindowSize: number | null;
  /**
   * `override_stream_error_on_invalid_http_message`, else the deprecated
   * `stream_error_on_invalid_http_messaging`: a request (downstream) or response (upstream) the
   * proxy finds malformed resets its stream; false (the reference's default) ends the whole connection.
   */
  streamErrorOnInvalidMessaging: boolean;
  /** The flood limits, the reference's defaults where unset. */
  limits: FloodLimits;
  /** `connection_keepalive`: PINGs on the connection and how long an ACK may take; null: none. */
  keepalive: KeepaliveOptions | null;
}

/** The flood limits, as `http2_protocol_options` names them, and where each goes. */
const FLOOD_FIELDS: Array<[string, keyof FloodLimits, number]> = [
  ['max_outbound_frames', 'maxOutboundFrames', 1],
  ['max_outbound_control_frames', 'maxOutboundControlFrames', 1],
  ['max_consecutive_inbound_frames_with_empty_payload', 'maxConsecutiveInboundFramesWithEmptyPayload', 0],
  ['max_inbound_priority_frames_per_stream', 'maxInboundPriorityFramesPerStream', 0],
  ['max_inbound_window_update_frames_per_data_frame_sent', 'maxInboundWindowUpdateFramesPerDataFrameSent', 1],
];

/**
 * `Http2ProtocolOptions` fields, on the connection manager and on a cluster alike: the flood
 * limits and the answer to invalid messaging act both ways, the downstream codec and the
 * upstream sessions being one codec.
 */
export const HTTP2_OPTIONS_FIELDS: FieldTable = {
  ...acting(
    'hpack_table_size',
    'max_concurrent_streams',
    'initial_stream_window_size',
    'initial_connection_window_size',
    'stream_error_on_invalid_http_messaging',
    'override_stream_error_on_invalid_http_message',
    'connection_keepalive',
    ...FLOOD_FIELDS.map(([field]) => field),
  ),
  allow_connect: notYet('CONNECT over HTTP/2 (allow_connect)'),
  allow_metadata: notYet('METADATA frames (allow_metadata)'),
  custom_settings_parameters: notYet('custom SETTINGS parameters (custom_settings_parameters)'),
};

const KEEPALIVE_FIELDS: FieldTable = acting(
  'interval',
  'timeout',
  'interval_jitter',
  'connection_idle_interval',
);
const PERCENT_FIELDS: FieldTable = acting('value');

/** The reference's `interval_jitter` when unset: 15 % of the interval. */
const DEFAULT_JITTER_PERCENT = 15;

/**
 * `KeepaliveSettings`: `timeout` is required, and each duration set is at least 1 ms (the
 * reference's bounds); an `interval` or `connection_idle_interval` of 0 sends no such PING.
 */
function compileKeepalive(config: JsonObject, path: string, report: Report): KeepaliveOptions | null {
  checkFields(config, path, report, KEEPALIVE_FIELDS, 'KeepaliveSettings');
  const duration = (field: string): number => {
    if (config[field] === undefined) return 0;
    const ms = durationMs(config[field], -1);
    if (!(ms >= 1)) report.error(`${path}.${field}`, 'must be at least 1ms');
    return ms;
  };
  if (config.timeout === undefined) report.error(`${path}.timeout`, 'required field missing', 'missing');
  const timeoutMs = duration('timeout');
  let percent = DEFAULT_JITTER_PERCENT;
  if (config.interval_jitter !== undefined) {
    const jitter = objectOf(config.interval_jitter);
    checkFields(jitter, `${path}.interval_jitter`, report, PERCENT_FIELDS, 'Percent');
    percent = typeof jitter.value === 'number' ? jitter.value : 0;
    if (!(percent >= 0 && percent <= 100))
      report.error(
        `${path}.interval_jitter.value`,
        `must be from 0 to 100, got ${JSON.stringify(jitter.value)}`,
      );
  }
  const intervalMs = duration('interval');
  const idleIntervalMs = duration('connection_idle_interval');
  if (timeoutMs < 1) return null;
  return { intervalMs, timeoutMs, jitter: percent / 100, idleIntervalMs };
}

/** The largest HTTP/2 window (RFC 7540 6.9.1) and the reference's upper bound of max_concurrent_streams. */
const MAX_31 = 2 ** 31 - 1;

/** One UInt32 field of `http2_protocol_options` within the reference's bounds; undefined when unset or out of them. */
function boundedField(
  options: JsonObject,
  field: string,
  [min, max]: [number, number],
  path: string,
  report: Report,
): number | undefined {
  const value = options[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    report.error(
      `${path}.${field}`,
      `must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`,
    );
    return undefined;
  }
  return value;
}

/**
 * `http2_protocol_options` of a connection manager (the downstream codec) or a cluster (its
 * upstream sessions): the SETTINGS sent and the connection window.
 */
export function compileHttp2Options(options: JsonObject, path: string, report: Report): Http2Options {
  checkFields(options, path, report, HTTP2_OPTIONS_FIELDS, 'Http2ProtocolOptions');
  const windowBounds: [number, number] = [65535, MAX_31];
  const headerTableSize = boundedField(options, 'hpack_table_size', [0, 2 ** 32 - 1], path, report);
  const maxConcurrentStreams = boundedField(options, 'max_concurrent_streams', [1, MAX_31], path, report);
  const initialWindowSize = boundedField(options, 'initial_stream_window_size', windowBounds, path, report);
  const settings: Http2Options['settings'] = {};
  if (headerTableSize !== undefined) settings.headerTableSize = headerTableSize;
  if (maxConcurrentStreams !== undefined) settings.maxConcurrentStreams = maxConcurrentStreams;
  if (initialWindowSize !== undefined) settings.initialWindowSize = initialWindowSize;
  const connectionWindow = boundedField(
    options,
    'initial_connection_window_size',
    windowBounds,
    path,
    report,
  );
  const limits: FloodLimits = { ...DEFAULT_FLOOD_LIMITS };
  for (const [field, key, min] of FLOOD_FIELDS) {
    const value = boundedField(options, field, [min, 2 ** 32 - 1], path, report);
    if (value !== undefined) limits[key] = value;
  }
  return {
    settings,
    connectionWindowSize: connectionWindow ?? null,
    streamErrorOnInvalidMessaging:
      typeof options.override_stream_error_on_invalid_http_message === 'boolean'
        ? options.override_stream_error_on_invalid_http_message
        : options.stream_error_on_invalid_http_messaging === true,
    limits,
    keepalive:
      options.connection_keepalive === undefined
        ? null
        : compileKeepalive(objectOf(options.connection_keepalive), `${path}.connection_keepalive`, report),
  };
}
