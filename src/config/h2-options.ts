import type { JsonObject } from '../../events/config.js';
import { acting, checkFields, type FieldTable, notYet } from '../bootstrap/honoured.js';
import type { Report } from '../bootstrap/report.js';
import { DEFAULT_FLOOD_LIMITS, type FloodLimits } from '../dataplane/codec/h2/limits.js';

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
    ...FLOOD_FIELDS.map(([field]) => field),
  ),
  allow_connect: notYet('CONNECT over HTTP/2 (allow_connect)'),
  allow_metadata: notYet('METADATA frames (allow_metadata)'),
  custom_settings_parameters: notYet('custom SETTINGS parameters (custom_settings_parameters)'),
};

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
  };
}
