import type { Json, JsonObject } from '../../events/config.js';
import { arrayOf, durationMs, numberOr, objectOf, stringOr } from '../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable, notYet } from '../bootstrap/honoured.js';
import { attempt, Report } from '../bootstrap/report.js';
import {
  compileHeaderMutation,
  type HeaderMutation,
  headerValueField,
} from '../dataplane/router/header-mutation.js';

/** `HealthCheck.http_health_check`, defaults applied. */
export interface HttpCheckSettings {
  kind: 'http';
  /** Host header; empty means the cluster's name. */
  host: string;
  path: string;
  /** `request_headers_to_add` / `_remove`, compiled as the router's are; null when neither is set. */
  headers: HeaderMutation | null;
  /** Half-open ranges `[start, end)` of statuses that pass; default `[200, 201)`. */
  expectedStatuses: Array<[number, number]>;
  http2: boolean;
  /** `service_name`: the response's `x-proxy-upstream-healthchecked-cluster` must start with it. */
  serviceName: string;
}

/** `HealthCheck.tcp_health_check`: no `send` and no `receive` is a connect-only check. */
export interface TcpCheckSettings {
  kind: 'tcp';
  send: Buffer | null;
  /** Blocks that must all be found, in order, not necessarily contiguous. */
  receive: Buffer[];
}

/** `HealthCheck.grpc_health_check`. */
export interface GrpcCheckSettings {
  kind: 'grpc';
  serviceName: string;
  /** `:authority`; empty means the cluster's name. */
  authority: string;
}

export type CheckerSettings = HttpCheckSettings | TcpCheckSettings | GrpcCheckSettings;

/** One `HealthCheck` of a cluster with the reference's defaults applied, times in ms. */
export interface HealthCheckSettings {
  timeoutMs: number;
  intervalMs: number;
  initialJitterMs: number;
  intervalJitterMs: number;
  intervalJitterPercent: number;
  unhealthyThreshold: number;
  healthyThreshold: number;
  reuseConnection: boolean;
  noTrafficIntervalMs: number;
  /** `no_traffic_healthy_interval`: the no-traffic wait of a healthy host (default `no_traffic_interval`). */
  noTrafficHealthyIntervalMs: number;
  unhealthyIntervalMs: number;
  unhealthyEdgeIntervalMs: number;
  healthyEdgeIntervalMs: number;
  checker: CheckerSettings;
  /** The health check event log (`event_log_path`), empty for none. */
  eventLogPath: string;
  /** Log every failed check, not only a host's first one. */
  alwaysLogFailures: boolean;
}

const HEALTH_CHECK_FIELDS: FieldTable = {
  ...acting('timeout', 'interval', 'initial_jitter', 'interval_jitter', 'interval_jitter_percent'),
  ...acting('unhealthy_threshold', 'healthy_threshold', 'reuse_connection', 'no_traffic_interval'),
  ...acting('unhealthy_interval', 'unhealthy_edge_interval', 'healthy_edge_interval'),
  ...acting('no_traffic_healthy_interval'),
  ...acting('http_health_check', 'tcp_health_check', 'grpc_health_check'),
  alt_port: notYet('alt_port (a separate health check port)'),
  ...acting('event_log_path', 'always_log_health_check_failures'),
  event_service: notYet('the health check event service'),
  // Checks use the cluster's own TLS context; only this ALPN override is missing.
  tls_options: notYet('tls_options (the ALPN of TLS health checks)'),
  custom_health_check: notYet('custom health checkers'),
};
const HTTP_CHECK_FIELDS: FieldTable = {
  ...acting('host', 'path', 'request_headers_to_add', 'request_headers_to_remove', 'use_http2'),
  ...acting('expected_statuses', 'codec_client_type', 'service_name'),
  send: notYet('an HTTP health check payload (send)'),
  receive: notYet('an HTTP health check response match (receive)'),
  service_name_matcher: notYet('service_name_matcher'),
};
const TCP_CHECK_FIELDS: FieldTable = acting('send', 'receive');
const GRPC_CHECK_FIELDS: FieldTable = acting('service_name', 'authority');
const PAYLOAD_FIELDS: FieldTable = acting('text', 'binary');

const SIXTY_SECONDS = 60_000;

/** Parses a `Duration` that must be set and positive; reports and returns 0 otherwise. */
function requiredPositive(hc: JsonObject, key: string, p: string, report: Report): number {
  if (hc[key] === undefined) {
    report.error(`${p}.${key}`, 'required field missing', 'missing');
    return 0;
  }
  const ms = durationMs(hc[key], 0);
  if (ms <= 0) report.error(`${p}.${key}`, 'must be greater than 0s');
  return ms;
}

/** An optional `Duration` that must be positive when set (the reference's `gt: {}`). */
function optionalPositive(hc: JsonObject, key: string, fallback: number, p: string, report: Report): number {
  if (hc[key] === undefined) return fallback;
  const ms = durationMs(hc[key], 0);
  if (ms <= 0) report.error(`${p}.${key}`, 'must be greater than 0s');
  return ms;
}

/** A `HealthCheck.Payload`: hex `text` or base64 `binary` (proto3 JSON bytes). */
function payloadOf(value: Json | undefined, p: string, report: Report): Buffer | null {
  const payload = objectOf(value);
  checkFields(payload, p, report, PAYLOAD_FIELDS, 'core.HealthCheck.Payload');
  if (typeof payload.text === 'string') {
    if (payload.text === '' || !/^([0-9a-fA-F]{2})+$/.test(payload.text)) {
      report.error(`${p}.text`, 'must be a non-empty even-length hex string');
      return null;
    }
    return Buffer.from(payload.text, 'hex');
  }
  if (typeof payload.binary === 'string') return Buffer.from(payload.binary, 'base64');
  report.error(p, 'needs text or binary', 'missing');
  return null;
}

function httpChecker(http: JsonObject, p: string, report: Report): HttpCheckSettings {
  checkFields(http, p, report, HTTP_CHECK_FIELDS, 'core.HealthCheck.HttpHealthCheck');
  // Written into the check's request line and Host: CR, LF or NUL would inject into it.
  const path = headerValueField(http.path, `${p}.path`, report);
  if (!path) report.error(`${p}.path`, 'required field missing', 'missing');
  const codec = stringOr(http.codec_client_type, 'HTTP1');
  if (codec === 'HTTP3')
    report.unsupported(`${p}.codec_client_type`, 'HTTP/3 health checks are not implemented');
  const expectedStatuses: Array<[number, number]> = [];
  arrayOf(http.expected_statuses).forEach((range, i) => {
    const r = objectOf(range);
    const start = numberOr(r.start, 0);
    const end = numberOr(r.end, 0);
    // The reference's bounds: statuses are 100..599, and a range is half-open.
    if (start < 100 || end > 600 || start >= end)
      report.error(`${p}.expected_statuses[${i}]`, `[${start}, ${end}) is not a range within [100, 600)`);
    expectedStatuses.push([start, end]);
  });
  return {
    kind: 'http',
    host: headerValueField(http.host, `${p}.host`, report),
    path,
    headers: attempt(report, p, () => compileHeaderMutation(http, p, report)) ?? null,
    expectedStatuses: expectedStatuses.length > 0 ? expectedStatuses : [[200, 201]],
    http2: http.use_http2 === true || codec === 'HTTP2',
    serviceName: stringOr(http.service_name, ''),
  };
}

function tcpChecker(tcp: JsonObject, p: string, report: Report): TcpCheckSettings {
  checkFields(tcp, p, report, TCP_CHECK_FIELDS, 'core.HealthCheck.TcpHealthCheck');
  const receive: Buffer[] = [];
  arrayOf(tcp.receive).forEach((payload, i) => {
    const bytes = payloadOf(payload, `${p}.receive[${i}]`, report);
    if (bytes) receive.push(bytes);
  });
  return {
    kind: 'tcp',
    send: tcp.send === undefined ? null : payloadOf(tcp.send, `${p}.send`, report),
    receive,
  };
}

function checkerOf(hc: JsonObject, p: string, report: Report): CheckerSettings {
  if (hc.http_health_check !== undefined)
    return httpChecker(objectOf(hc.http_health_check), `${p}.http_health_check`, report);
  if (hc.tcp_health_check !== undefined)
    return tcpChecker(objectOf(hc.tcp_health_check), `${p}.tcp_health_check`, report);
  if (hc.grpc_health_check !== undefined) {
    const grpc = objectOf(hc.grpc_health_check);
    checkFields(
      grpc,
      `${p}.grpc_health_check`,
      report,
      GRPC_CHECK_FIELDS,
      'core.HealthCheck.GrpcHealthCheck',
    );
    return {
      kind: 'grpc',
      serviceName: stringOr(grpc.service_name, ''),
      authority: stringOr(grpc.authority, ''),
    };
  }
  if (hc.custom_health_check === undefined)
    report.error(
      p,
      'needs one health checker: http_health_check, tcp_health_check or grpc_health_check',
      'missing',
    );
  return { kind: 'tcp', send: null, receive: [] };
}

/** A `UInt32Value` threshold that is required and at least 1. */
function threshold(hc: JsonObject, key: string, p: string, report: Report): number {
  if (hc[key] === undefined) {
    report.error(`${p}.${key}`, 'required field missing', 'missing');
    return 1;
  }
  const n = numberOr(hc[key], 0);
  if (!Number.isInteger(n) || n < 1) report.error(`${p}.${key}`, `${hc[key]} must be an integer >= 1`);
  return Math.max(1, n);
}

/**
 * Compiles one `HealthCheck` (canonical form) of a cluster; `p` names it in findings. Run by
 * `--mode validate` and by the health-check edge alike; served only when the report is clean.
 */
export function compileHealthCheck(hc: JsonObject, p: string, report: Report): HealthCheckSettings {
  checkFields(hc, p, report, HEALTH_CHECK_FIELDS, 'core.HealthCheck');
  const intervalMs = requiredPositive(hc, 'interval', p, report);
  const unhealthyIntervalMs = optionalPositive(hc, 'unhealthy_interval', intervalMs, p, report);
  const noTrafficIntervalMs = optionalPositive(hc, 'no_traffic_interval', SIXTY_SECONDS, p, report);
  return {
    timeoutMs: requiredPositive(hc, 'timeout', p, report),
    intervalMs,
    initialJitterMs: Math.max(0, durationMs(hc.initial_jitter, 0)),
    intervalJitterMs: Math.max(0, durationMs(hc.interval_jitter, 0)),
    intervalJitterPercent: Math.max(0, numberOr(hc.interval_jitter_percent, 0)),
    unhealthyThreshold: threshold(hc, 'unhealthy_threshold', p, report),
    healthyThreshold: threshold(hc, 'healthy_threshold', p, report),
    reuseConnection: hc.reuse_connection !== false,
    noTrafficIntervalMs,
    noTrafficHealthyIntervalMs: optionalPositive(
      hc,
      'no_traffic_healthy_interval',
      noTrafficIntervalMs,
      p,
      report,
    ),
    unhealthyIntervalMs,
    unhealthyEdgeIntervalMs: optionalPositive(hc, 'unhealthy_edge_interval', unhealthyIntervalMs, p, report),
    healthyEdgeIntervalMs: optionalPositive(hc, 'healthy_edge_interval', intervalMs, p, report),
    checker: checkerOf(hc, p, report),
    eventLogPath: stringOr(hc.event_log_path, ''),
    alwaysLogFailures: hc.always_log_health_check_failures === true,
  };
}

/** `OutlierDetection` with the reference's defaults; every value may be overridden at run time. */
export interface OutlierSettings {
  consecutive5xx: number;
  intervalMs: number;
  baseEjectionTimeMs: number;
  maxEjectionPercent: number;
  enforcingConsecutive5xx: number;
  enforcingSuccessRate: number;
  successRateMinimumHosts: number;
  successRateRequestVolume: number;
  successRateStdevFactor: number;
  consecutiveGatewayFailure: number;
  enforcingConsecutiveGatewayFailure: number;
  splitExternalLocalOriginErrors: boolean;
  consecutiveLocalOriginFailure: number;
  enforcingConsecutiveLocalOriginFailure: number;
  enforcingLocalOriginSuccessRate: number;
  failurePercentageThreshold: number;
  enforcingFailurePercentage: number;
  enforcingFailurePercentageLocalOrigin: number;
  failurePercentageMinimumHosts: number;
  failurePercentageRequestVolume: number;
}

/** Each numeric field: its config key (also the runtime key after `outlier_detection.`) and default. */
export const OUTLIER_NUMBERS: ReadonlyArray<[keyof OutlierSettings, string, number]> = [
  ['consecutive5xx', 'consecutive_5xx', 5],
  ['maxEjectionPercent', 'max_ejection_percent', 10],
  ['enforcingConsecutive5xx', 'enforcing_consecutive_5xx', 100],
  ['enforcingSuccessRate', 'enforcing_success_rate', 100],
  ['successRateMinimumHosts', 'success_rate_minimum_hosts', 5],
  ['successRateRequestVolume', 'success_rate_request_volume', 100],
  ['successRateStdevFactor', 'success_rate_stdev_factor', 1900],
  ['consecutiveGatewayFailure', 'consecutive_gateway_failure', 5],
  ['enforcingConsecutiveGatewayFailure', 'enforcing_consecutive_gateway_failure', 0],
  ['consecutiveLocalOriginFailure', 'consecutive_local_origin_failure', 5],
  ['enforcingConsecutiveLocalOriginFailure', 'enforcing_consecutive_local_origin_failure', 100],
  ['enforcingLocalOriginSuccessRate', 'enforcing_local_origin_success_rate', 100],
  ['failurePercentageThreshold', 'failure_percentage_threshold', 85],
  ['enforcingFailurePercentage', 'enforcing_failure_percentage', 0],
  ['enforcingFailurePercentageLocalOrigin', 'enforcing_failure_percentage_local_origin', 0],
  ['failurePercentageMinimumHosts', 'failure_percentage_minimum_hosts', 5],
  ['failurePercentageRequestVolume', 'failure_percentage_request_volume', 50],
];

/** Fields that are percentages (0..100). */
const PERCENT_KEYS = new Set([
  'max_ejection_percent',
  'enforcing_consecutive_5xx',
  'enforcing_success_rate',
  'enforcing_consecutive_gateway_failure',
  'enforcing_consecutive_local_origin_failure',
  'enforcing_local_origin_success_rate',
  'failure_percentage_threshold',
  'enforcing_failure_percentage',
  'enforcing_failure_percentage_local_origin',
]);

const OUTLIER_FIELDS: FieldTable = {
  ...acting(...OUTLIER_NUMBERS.map(([, key]) => key)),
  ...acting('interval', 'base_ejection_time', 'split_external_local_origin_errors'),
};

/** Compiles a cluster's `outlier_detection` (canonical form); `p` names it in findings. */
export function compileOutlierDetection(od: JsonObject, p: string, report: Report): OutlierSettings {
  checkFields(od, p, report, OUTLIER_FIELDS, 'cluster.OutlierDetection');
  const out = {
    intervalMs: optionalPositive(od, 'interval', 10_000, p, report),
    baseEjectionTimeMs: optionalPositive(od, 'base_ejection_time', 30_000, p, report),
    splitExternalLocalOriginErrors: od.split_external_local_origin_errors === true,
  } as OutlierSettings;
  for (const [field, key, fallback] of OUTLIER_NUMBERS) {
    const n = numberOr(od[key], fallback);
    if (PERCENT_KEYS.has(key) && (n < 0 || n > 100))
      report.error(`${p}.${key}`, `${od[key]} is not in 0..100`);
    (out as unknown as Record<string, number>)[field] = n;
  }
  return out;
}

const OUTLIER_LOG_FIELDS: FieldTable = {
  event_log_path: 'act',
  event_service: notYet('the outlier event service'),
};

/**
 * Compiles `cluster_manager.outlier_detection` (canonical form): the path of the outlier
 * event log, empty for none.
 */
export function compileOutlierEventLog(od: JsonObject, p: string, report: Report): string {
  checkFields(od, p, report, OUTLIER_LOG_FIELDS, 'ClusterManager.OutlierDetection');
  return stringOr(od.event_log_path, '');
}

/**
 * The outlier event log path of a bootstrap (empty: none), for the outlier detector; its
 * findings were given when the bootstrap was validated.
 */
export function compiledOutlierEventLog(bootstrap: JsonObject | undefined): string {
  const od = objectOf(objectOf(bootstrap?.cluster_manager).outlier_detection);
  return compileOutlierEventLog(od, 'cluster_manager.outlier_detection', new Report('bootstrap'));
}

/** The field tables of the health messages, by the message name their findings use. */
export const FIELD_TABLES = {
  'core.HealthCheck': HEALTH_CHECK_FIELDS,
  'core.HealthCheck.HttpHealthCheck': HTTP_CHECK_FIELDS,
  'core.HealthCheck.TcpHealthCheck': TCP_CHECK_FIELDS,
  'core.HealthCheck.GrpcHealthCheck': GRPC_CHECK_FIELDS,
  'core.HealthCheck.Payload': PAYLOAD_FIELDS,
  'cluster.OutlierDetection': OUTLIER_FIELDS,
  'ClusterManager.OutlierDetection': OUTLIER_LOG_FIELDS,
};
