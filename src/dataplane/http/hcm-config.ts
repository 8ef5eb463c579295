import type { JsonObject } from '../../../events/config.js';
import { listOf, numberOr, objectOf } from '../../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable, notYet } from '../../bootstrap/honoured.js';
import type { Report } from '../../bootstrap/report.js';
import { compileConfigSource } from '../../config/config-source.js';
import { compileHttp2Options, HTTP2_OPTIONS_FIELDS, type Http2Options } from '../../config/h2-options.js';
import { type AccessLogSpec, compileAccessLogs } from '../access-log/config.js';
import { headerValueField } from '../router/header-mutation.js';
import { compileRouteTable, type RouteTable } from '../router/table.js';
import { compileUpgradeConfigs, type UpgradeTable } from '../router/upgrade-config.js';
import {
  compileHcmTracing,
  FIELD_TABLES as TRACING_FIELD_TABLES,
  type TracingSpec,
} from '../tracing/config.js';
import {
  compileEdge,
  FIELD_TABLES as EDGE_FIELD_TABLES,
  EDGE_FIELDS,
  type EdgeSpec,
  type UnderscoreAction,
} from './edge.js';
import type { FilterChain } from './filters/chain.js';
import { compileHttpFilters } from './filters.js';
import type { ServerHeader } from './headers.js';
import {
  compileHttp1Settings,
  HTTP1_SETTINGS_FIELDS,
  type Http1Settings,
  http2StreamError,
} from './http1-options.js';
import {
  compileLocalReplyConfig,
  type LocalReplySpec,
  FIELD_TABLES as LOCAL_REPLY_FIELD_TABLES,
} from './local-reply-config.js';
import { compileHcmTimeouts, type HcmTimeouts } from './timeouts.js';
import type { EscapedSlashes } from './path-normalize.js';

export type Codec = 'AUTO' | 'HTTP1' | 'HTTP2';

/** An `HttpConnectionManager` config compiled for the data plane, the reference's defaults filled in. */
export interface HcmSpec {
  statPrefix: string;
  codec: Codec;
  routes: RouteTable;
  filters: FilterChain;
  serverName: string;
  /** `server_header_transformation`: the upstream's `server` replaced (default), kept if set, or passed through. */
  serverHeader: ServerHeader;
  /** Who the client is and what it may send (src/dataplane/http/edge.ts). */
  edge: EdgeSpec;
  /** `normalize_path`; null when unset: runtime `http_connection_manager.normalize_path` decides (default off). */
  normalizePath: boolean | null;
  /** `merge_slashes`. */
  mergeSlashes: boolean;
  /** `path_with_escaped_slashes_action`: KEEP for `KEEP_UNCHANGED` and the default. */
  escapedSlashes: EscapedSlashes;
  /** `add_user_agent`: tell the upstream the local cluster and node (see `upstreamRequestHead`). */
  addUserAgent: boolean;
  maxRequestHeadersBytes: number;
  maxHeadersCount: number;
  /** `common_http_protocol_options.headers_with_underscores_action` (src/dataplane/http/edge.ts). */
  underscores: UnderscoreAction;
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
  http2: Http2Options;
  /** `http_protocol_options` and `stream_error_on_invalid_http_message`: the HTTP/1 codec's rules. */
  http1: Http1Settings;
  /** `local_reply_config`: how the proxy's own replies are rewritten; null when unset. */
  localReply: LocalReplySpec | null;
}

const HCM_FIELDS: FieldTable = {
  ...acting(
    'stat_prefix',
    'codec_type',
    'route_config',
    'http_filters',
    'server_name',
    'server_header_transformation',
    ...EDGE_FIELDS,
    'normalize_path',
    'merge_slashes',
    'path_with_escaped_slashes_action',
    'add_user_agent',
    'max_request_headers_kb',
    'common_http_protocol_options',
    'request_timeout',
    'request_headers_timeout',
    'stream_idle_timeout',
    'delayed_close_timeout',
    // The deprecated v2 spelling of common_http_protocol_options.idle_timeout (compileHcmTimeouts).
    'idle_timeout',
    'http2_protocol_options',
    'http_protocol_options',
    'stream_error_on_invalid_http_message',
  ),
  // The wait between the reference's two-step HTTP/2 GOAWAY; this build drains with one.
  drain_timeout: 'advise',
  rds: 'act',
  // Tunnels: src/dataplane/http/upgrade.ts.
  upgrade_configs: 'act',
  scoped_routes: notYet('scoped route discovery'),
  access_log: 'act',
  tracing: 'act',
  local_reply_config: 'act',
};

const PROTOCOL_OPTIONS_FIELDS: FieldTable = acting(
  'idle_timeout',
  'max_connection_duration',
  'max_stream_duration',
  'max_headers_count',
  'headers_with_underscores_action',
);

const underscoreAction = (value: unknown): UnderscoreAction =>
  value === 'REJECT_REQUEST' || value === 'DROP_HEADER' ? value : 'ALLOW';

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

/**
 * A limit within the reference's validation bounds (`max_request_headers_kb` 1-8192,
 * `max_headers_count` at least 1): 0 would refuse every request, and a huge head limit is memory
 * a client may fill. Out of bounds is an error naming the field; unset is `fallback`.
 */
/** `path_with_escaped_slashes_action`; the reference's default (no runtime override) keeps the path. */
function escapedSlashes(value: unknown): EscapedSlashes {
  if (value === 'REJECT_REQUEST') return 'REJECT';
  if (value === 'UNESCAPE_AND_FORWARD') return 'UNESCAPE';
  if (value === 'UNESCAPE_AND_REDIRECT') return 'REDIRECT';
  return 'KEEP';
}

function bounded(
  message: JsonObject,
  field: string,
  fallback: number,
  [min, max]: [number, number],
  path: string,
  report: Report,
): number {
  const value = numberOr(message[field], fallback);
  if (value >= min && value <= max) return value;
  report.error(`${path}.${field}`, `must be from ${min} to ${max}, got ${value}`);
  return fallback;
}

/** The field tables of this compile step, by the message name its findings use (docs/bootstrap.md lists them). */
export const FIELD_TABLES = {
  HttpConnectionManager: HCM_FIELDS,
  HttpProtocolOptions: PROTOCOL_OPTIONS_FIELDS,
  ...EDGE_FIELD_TABLES,
  ...TRACING_FIELD_TABLES,
  ...LOCAL_REPLY_FIELD_TABLES,
  Http2ProtocolOptions: HTTP2_OPTIONS_FIELDS,
  // The cluster's table has the message's name; this one is the downstream codec's.
  'Http1ProtocolOptions (connection manager)': HTTP1_SETTINGS_FIELDS,
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
  const h2Options = objectOf(config.http2_protocol_options);
  if (codec !== 'AUTO' && codec !== 'HTTP1' && codec !== 'HTTP2')
    report.unsupported(`${path}.codec_type`, `codec ${codec} is not implemented (use AUTO, HTTP1 or HTTP2)`);
  return {
    statPrefix,
    codec: codec as Codec,
    routes: compileRouteTable(objectOf(config.route_config), `${path}.route_config`, report),
    filters: compileHttpFilters(listOf(config.http_filters), `${path}.http_filters`, report),
    serverName: headerValueField(config.server_name, `${path}.server_name`, report) || 'proxy',
    serverHeader:
      config.server_header_transformation === 'APPEND_IF_ABSENT' ||
      config.server_header_transformation === 'PASS_THROUGH'
        ? config.server_header_transformation
        : 'OVERWRITE',
    edge: compileEdge(config, path, report),
    normalizePath: typeof config.normalize_path === 'boolean' ? config.normalize_path : null,
    mergeSlashes: config.merge_slashes === true,
    escapedSlashes: escapedSlashes(config.path_with_escaped_slashes_action),
    addUserAgent: config.add_user_agent === true,
    maxRequestHeadersBytes: bounded(config, 'max_request_headers_kb', 60, [1, 8192], path, report) * 1024,
    maxHeadersCount: bounded(
      common,
      'max_headers_count',
      100,
      [1, 2 ** 32 - 1],
      `${path}.common_http_protocol_options`,
      report,
    ),
    underscores: underscoreAction(common.headers_with_underscores_action),
    timeouts: compileHcmTimeouts(config, path, report),
    accessLogs: compileAccessLogs(config.access_log, `${path}.access_log`, report),
    rdsName,
    upgrades: compileUpgradeConfigs(config.upgrade_configs, `${path}.upgrade_configs`, report),
    tracing:
      config.tracing === undefined
        ? null
        : compileHcmTracing(objectOf(config.tracing), `${path}.tracing`, report),
    http2: {
      ...compileHttp2Options(h2Options, `${path}.http2_protocol_options`, report),
      streamErrorOnInvalidMessaging: http2StreamError(h2Options, config.stream_error_on_invalid_http_message),
    },
    http1: compileHttp1Settings(
      objectOf(config.http_protocol_options),
      config.stream_error_on_invalid_http_message,
      `${path}.http_protocol_options`,
      report,
    ),
    localReply:
      config.local_reply_config === undefined
        ? null
        : compileLocalReplyConfig(objectOf(config.local_reply_config), `${path}.local_reply_config`, report),
  };
}
