import type { JsonObject } from '../../../events/config.js';
import { numberOr, objectOf } from '../../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable, notYet } from '../../bootstrap/honoured.js';
import type { Report } from '../../bootstrap/report.js';
import { compileConfigSource } from '../../xds/config-source.js';
import { type AccessLogSpec, compileAccessLogs } from '../access-log/config.js';
import { listOf } from '../router/matchers.js';
import { compileRouteTable, type RouteTable } from '../router/table.js';
import { compileUpgradeConfigs, type UpgradeTable } from '../router/upgrade-config.js';
import {
  compileHcmTracing,
  FIELD_TABLES as TRACING_FIELD_TABLES,
  type TracingSpec,
} from '../tracing/config.js';
import { compileHttpFilters, type FilterChain } from './filters.js';
import { compileHcmTimeouts, type HcmTimeouts } from './timeouts.js';

export type Codec = 'AUTO' | 'HTTP1' | 'HTTP2';

/** An `HttpConnectionManager` config compiled for the data plane, the reference's defaults filled in. */
export interface HcmSpec {
  statPrefix: string;
  codec: Codec;
  routes: RouteTable;
  filters: FilterChain;
  serverName: string;
  generateRequestId: boolean;
  /** `add_user_agent`: tell the upstream the local cluster and node (see `upstreamRequestHead`). */
  addUserAgent: boolean;
  maxRequestHeadersBytes: number;
  maxHeadersCount: number;
  timeouts: HcmTimeouts;
  /** `access_log`: one line per request, written when it ends. */
  accessLogs: AccessLogSpec[];
  /** `rds.route_config_name`: the table comes from route discovery, read per request; else null. */
  rdsName: string | null;
  /** `upgrade_configs`: the upgrade types (WebSocket ...) requests may ask for. */
  upgrades: UpgradeTable;
  /** `tracing`: spans of this connection manager's requests (src/dataplane/tracing/); null when unset. */
  tracing: TracingSpec | null;
  /** `http2_protocol_options`: what the HTTP/2 codec tells its clients. */
  http2: DownstreamHttp2;
}

/**
 * `http2_protocol_options` as the `node:http2` codec applies it. A field left unset keeps the
 * codec's value rather than the reference's default: the reference's 256 MiB windows would let
 * a client send that much before the proxy's reading pauses (flow control is what holds a body
 * to the buffer limit here), and its stream limit of 2^31-1 is unlimited as the codec's is.
 */
export interface DownstreamHttp2 {
  /** Sent in the codec's SETTINGS: `headerTableSize`, `maxConcurrentStreams`, `initialWindowSize`, those set. */
  settings: { headerTableSize?: number; maxConcurrentStreams?: number; initialWindowSize?: number };
  /** `initial_connection_window_size`: the session's receive window; null keeps HTTP/2's 65535. */
  connectionWindowSize: number | null;
}

const HCM_FIELDS: FieldTable = {
  ...acting(
    'stat_prefix',
    'codec_type',
    'route_config',
    'http_filters',
    'server_name',
    'generate_request_id',
    'add_user_agent',
    'max_request_headers_kb',
    // The peer address is always appended to x-forwarded-for, which is what `true` asks for.
    'use_remote_address',
    'common_http_protocol_options',
    'request_timeout',
    'stream_idle_timeout',
    'delayed_close_timeout',
    // The deprecated v2 spelling of common_http_protocol_options.idle_timeout (compileHcmTimeouts).
    'idle_timeout',
    'http2_protocol_options',
  ),
  // The wait between the reference's two-step HTTP/2 GOAWAY; this build drains with one.
  drain_timeout: 'advise',
  rds: 'act',
  // Tunnels: src/dataplane/http/upgrade.ts.
  upgrade_configs: 'act',
  scoped_routes: notYet('scoped route discovery'),
  access_log: 'act',
  tracing: 'act',
};

const PROTOCOL_OPTIONS_FIELDS: FieldTable = acting(
  'idle_timeout',
  'max_connection_duration',
  'max_headers_count',
);

const HTTP2_FIELDS: FieldTable = {
  ...acting(
    'hpack_table_size',
    'max_concurrent_streams',
    'initial_stream_window_size',
    'initial_connection_window_size',
  ),
  allow_connect: notYet('CONNECT over HTTP/2 (allow_connect)'),
  allow_metadata: notYet('METADATA frames (allow_metadata)'),
  max_outbound_frames: notYet('the outbound frame flood limit (max_outbound_frames)'),
  max_outbound_control_frames: notYet('the outbound control frame flood limit (max_outbound_control_frames)'),
  max_consecutive_inbound_frames_with_empty_payload: notYet(
    'the empty frame flood limit (max_consecutive_inbound_frames_with_empty_payload)',
  ),
  max_inbound_priority_frames_per_stream: notYet(
    'the PRIORITY frame flood limit (max_inbound_priority_frames_per_stream)',
  ),
  max_inbound_window_update_frames_per_data_frame_sent: notYet(
    'the WINDOW_UPDATE flood limit (max_inbound_window_update_frames_per_data_frame_sent)',
  ),
  stream_error_on_invalid_http_messaging: notYet(
    'resetting only the stream on invalid HTTP messaging (stream_error_on_invalid_http_messaging)',
  ),
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

/** `http2_protocol_options` of the connection manager: the downstream codec's SETTINGS and connection window. */
function compileHttp2(options: JsonObject, path: string, report: Report): DownstreamHttp2 {
  checkFields(options, path, report, HTTP2_FIELDS, 'Http2ProtocolOptions');
  const windowBounds: [number, number] = [65535, MAX_31];
  const headerTableSize = boundedField(options, 'hpack_table_size', [0, 2 ** 32 - 1], path, report);
  const maxConcurrentStreams = boundedField(options, 'max_concurrent_streams', [1, MAX_31], path, report);
  const initialWindowSize = boundedField(options, 'initial_stream_window_size', windowBounds, path, report);
  const settings: DownstreamHttp2['settings'] = {};
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
  return { settings, connectionWindowSize: connectionWindow ?? null };
}

const RDS_FIELDS: FieldTable = acting('route_config_name', 'config_source');

/** `rds`: the name of the discovered table and where it comes from. */
function compileRds(rds: JsonObject, path: string, report: Report): string {
  checkFields(rds, path, report, RDS_FIELDS, 'Rds');
  const name = typeof rds.route_config_name === 'string' ? rds.route_config_name : '';
  if (!name) report.error(`${path}.route_config_name`, 'required field missing', 'missing');
  if (rds.config_source === undefined)
    report.error(`${path}.config_source`, 'required field missing', 'missing');
  else compileConfigSource(objectOf(rds.config_source), `${path}.config_source`, report);
  return name;
}

/** The field tables of this compile step, by the message name its findings use (docs/bootstrap.md lists them). */
export const FIELD_TABLES = {
  HttpConnectionManager: HCM_FIELDS,
  HttpProtocolOptions: PROTOCOL_OPTIONS_FIELDS,
  ...TRACING_FIELD_TABLES,
  Http2ProtocolOptions: HTTP2_FIELDS,
};

/**
 * Compiles one `HttpConnectionManager` typed_config (canonical form); `path` is the filter's
 * `typed_config` path. Findings go to `report`; the value is served only when it has none.
 */
export function compileHcm(config: JsonObject, path: string, report: Report): HcmSpec {
  checkFields(config, path, report, HCM_FIELDS, 'HttpConnectionManager');
  const common = objectOf(config.common_http_protocol_options);
  checkFields(
    common,
    `${path}.common_http_protocol_options`,
    report,
    PROTOCOL_OPTIONS_FIELDS,
    'HttpProtocolOptions',
  );
  const statPrefix = typeof config.stat_prefix === 'string' ? config.stat_prefix : '';
  if (!statPrefix) report.error(`${path}.stat_prefix`, 'required field missing', 'missing');
  if (config.route_config === undefined && config.rds === undefined && config.scoped_routes === undefined)
    report.error(path, 'needs routes: set route_config (inline) or rds', 'missing');
  const rdsName = config.rds !== undefined ? compileRds(objectOf(config.rds), `${path}.rds`, report) : null;
  const codec = typeof config.codec_type === 'string' ? config.codec_type : 'AUTO';
  if (codec !== 'AUTO' && codec !== 'HTTP1' && codec !== 'HTTP2')
    report.unsupported(`${path}.codec_type`, `codec ${codec} is not implemented (use AUTO, HTTP1 or HTTP2)`);
  return {
    statPrefix,
    codec: codec as Codec,
    routes: compileRouteTable(objectOf(config.route_config), `${path}.route_config`, report),
    filters: compileHttpFilters(listOf(config.http_filters), `${path}.http_filters`, report),
    serverName: typeof config.server_name === 'string' && config.server_name ? config.server_name : 'proxy',
    generateRequestId: config.generate_request_id !== false,
    addUserAgent: config.add_user_agent === true,
    maxRequestHeadersBytes: numberOr(config.max_request_headers_kb, 60) * 1024,
    maxHeadersCount: numberOr(common.max_headers_count, 100),
    timeouts: compileHcmTimeouts(config, path, report),
    accessLogs: compileAccessLogs(config.access_log, `${path}.access_log`, report),
    rdsName,
    upgrades: compileUpgradeConfigs(config.upgrade_configs, `${path}.upgrade_configs`, report),
    tracing:
      config.tracing === undefined
        ? null
        : compileHcmTracing(objectOf(config.tracing), `${path}.tracing`, report),
    http2: compileHttp2(objectOf(config.http2_protocol_options), `${path}.http2_protocol_options`, report),
  };
}
