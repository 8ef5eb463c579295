/**
 * The compile step of the bootstrap's `stats_sinks` that send stats somewhere at each flush:
 * the statsd sink (UDP, or TCP to a cluster), the DogStatsD one and the metrics service (a
 * gRPC stream of Prometheus metric families). The hystrix sink, which
 * only feeds an admin stream, is read by src/config/stats.ts. The same function runs at
 * `--mode validate` and when the stats edge starts (src/stats/start.ts).
 */
import type { JsonObject } from '../../events/config.js';
import { type ApiVersion, apiVersion } from '../../reducers/settings/config-source.js';
import { arrayOf, numberOr, objectOf, stringOr } from '../../reducers/settings/values.js';
import { CONFIG_TYPE, configTypeOf } from '../bootstrap/extensions.js';
import { acting, checkFields, type FieldTable } from '../bootstrap/honoured.js';
import { fieldPath, Report } from '../bootstrap/report.js';
import { compileInitialMetadata } from './grpc-metadata.js';
import { checkIpLiteral } from './ip-literal.js';
import { SOCKET_ADDRESS_FIELDS } from './socket-address.js';

/** The reference's prefix of every name a statsd sink sends. */
export const DEFAULT_STATSD_PREFIX = 'envoy';

/** A statsd or DogStatsD sink compiled. */
export interface StatsdSinkSpec {
  kind: 'statsd';
  /** A UDP peer (`address`), or a TCP connection to a member of a cluster (`tcp_cluster_name`). */
  target: { kind: 'udp'; ip: string; port: number } | { kind: 'tcp'; cluster: string };
  /** Before every name, then a dot (`prefix`, default `envoy`). */
  prefix: string;
  /** DogStatsD: tag-extracted names, their tags as `|#name:value,...`. */
  tagged: boolean;
  /** `max_bytes_per_datagram`: lines joined up to this size; 0: a datagram per line. */
  maxDatagramBytes: number;
}

/** A metrics service sink compiled (`MetricsServiceConfig`). */
export interface MetricsServiceSinkSpec {
  kind: 'metrics_service';
  /** `envoy_grpc`: a member of a static cluster; `google_grpc`: its `target_uri` as gRPC dials it. */
  service: { kind: 'cluster'; cluster: string } | { kind: 'target'; target: string };
  /** `initial_metadata`: headers of every stream. */
  metadata: Array<[string, string]>;
  /** `transport_api_version`: the method's package (`envoy.service.metrics.v3`, or v2). */
  transport: ApiVersion;
  /** `report_counters_as_deltas`: what a counter counted since the last flush, not since start. */
  countersAsDeltas: boolean;
  /** `emit_tags_as_labels`: tag-extracted names, the tags as labels. */
  labels: boolean;
  /** `histogram_emit_mode`: a histogram as a summary, a histogram, or both (the default). */
  summary: boolean;
  histogram: boolean;
  /** `batch_size`: metric families per message; 0, all of a flush in one. */
  batchSize: number;
}

export type StatsSinkSpec = StatsdSinkSpec | MetricsServiceSinkSpec;

const STATSD_FIELDS: FieldTable = acting('address', 'tcp_cluster_name', 'prefix');
const DOG_STATSD_FIELDS: FieldTable = acting('address', 'prefix', 'max_bytes_per_datagram');
const ADDRESS_FIELDS: FieldTable = {
  socket_address: 'act',
  pipe: { refuse: 'a stats sink to a unix datagram socket (pipe) is not implemented; use socket_address' },
};

const METRICS_SERVICE_FIELDS: FieldTable = acting(
  'grpc_service',
  'report_counters_as_deltas',
  'transport_api_version',
  'emit_tags_as_labels',
  'histogram_emit_mode',
  'batch_size',
);
/** The metrics service's `GrpcService`: a stream, so `timeout` (a unary call's) has nothing to bound. */
const SINK_GRPC_SERVICE_FIELDS: FieldTable = {
  ...acting('envoy_grpc', 'google_grpc', 'initial_metadata'),
  timeout: 'advise',
};
const SINK_ENVOY_GRPC_FIELDS: FieldTable = acting('cluster_name');
/**
 * The schema knows no more of `GoogleGrpc` (its credentials are unknown fields, refused by the
 * loader by name): the target is dialled in plain text.
 */
const SINK_GOOGLE_GRPC_FIELDS: FieldTable = {
  target_uri: 'act',
  // The reference names its gRPC client's stats with it; this client keeps none.
  stat_prefix: 'advise',
};

/** The field tables of this compile step, by the message name its findings use (docs/bootstrap.md lists them). */
export const FIELD_TABLES = {
  StatsdSink: STATSD_FIELDS,
  DogStatsdSink: DOG_STATSD_FIELDS,
  Address: ADDRESS_FIELDS,
  MetricsServiceConfig: METRICS_SERVICE_FIELDS,
  'GrpcService (metrics_service)': SINK_GRPC_SERVICE_FIELDS,
  'EnvoyGrpc (metrics_service)': SINK_ENVOY_GRPC_FIELDS,
  'GoogleGrpc (metrics_service)': SINK_GOOGLE_GRPC_FIELDS,
};

const EMIT_MODES: Record<string, { summary: boolean; histogram: boolean }> = {
  SUMMARY_AND_HISTOGRAM: { summary: true, histogram: true },
  SUMMARY: { summary: true, histogram: false },
  HISTOGRAM: { summary: false, histogram: true },
};

/** The service's `GrpcService`: one `envoy_grpc` cluster or one `google_grpc` target. */
function sinkService(
  raw: JsonObject,
  path: string,
  report: Report,
): MetricsServiceSinkSpec['service'] | null {
  checkFields(raw, path, report, SINK_GRPC_SERVICE_FIELDS, 'GrpcService');
  if (raw.envoy_grpc !== undefined) {
    const envoy = objectOf(raw.envoy_grpc);
    checkFields(envoy, `${path}.envoy_grpc`, report, SINK_ENVOY_GRPC_FIELDS, 'EnvoyGrpc');
    const cluster = stringOr(envoy.cluster_name, '');
    if (cluster) return { kind: 'cluster', cluster };
    report.error(`${path}.envoy_grpc.cluster_name`, 'required field missing', 'missing');
    return null;
  }
  if (raw.google_grpc !== undefined) {
    const google = objectOf(raw.google_grpc);
    checkFields(google, `${path}.google_grpc`, report, SINK_GOOGLE_GRPC_FIELDS, 'GoogleGrpc');
    const target = stringOr(google.target_uri, '');
    if (target) return { kind: 'target', target };
    report.error(`${path}.google_grpc.target_uri`, 'required field missing', 'missing');
    return null;
  }
  report.error(`${path}.envoy_grpc`, 'required: envoy_grpc or google_grpc', 'missing');
  return null;
}

function metricsServiceSink(raw: JsonObject, path: string, report: Report): MetricsServiceSinkSpec | null {
  checkFields(raw, path, report, METRICS_SERVICE_FIELDS, 'MetricsServiceConfig');
  const at = fieldPath(path, 'grpc_service');
  if (raw.grpc_service === undefined) {
    report.error(at, 'required field missing', 'missing');
    return null;
  }
  const grpc = objectOf(raw.grpc_service);
  const service = sinkService(grpc, at, report);
  const metadata = compileInitialMetadata(grpc.initial_metadata, `${at}.initial_metadata`, report);
  const mode = stringOr(raw.histogram_emit_mode, 'SUMMARY_AND_HISTOGRAM');
  const emit = EMIT_MODES[mode];
  if (!emit) report.error(`${path}.histogram_emit_mode`, `unknown histogram_emit_mode '${mode}'`);
  if (!service || !emit) return null;
  return {
    kind: 'metrics_service',
    service,
    metadata,
    transport: apiVersion(raw.transport_api_version),
    countersAsDeltas: raw.report_counters_as_deltas === true,
    labels: raw.emit_tags_as_labels === true,
    ...emit,
    batchSize: numberOr(raw.batch_size, 0),
  };
}

/** A sink's UDP `address`: an IP and a port, as the reference resolves it (no name lookup). */
function udpAddress(raw: JsonObject, path: string, report: Report): StatsdSinkSpec['target'] | null {
  checkFields(raw, path, report, ADDRESS_FIELDS, 'Address');
  if (raw.socket_address === undefined) {
    if (raw.pipe === undefined) report.error(`${path}.socket_address`, 'required field missing', 'missing');
    return null;
  }
  const socket = objectOf(raw.socket_address);
  const at = `${path}.socket_address`;
  checkFields(socket, at, report, SOCKET_ADDRESS_FIELDS, 'SocketAddress');
  const ip = stringOr(socket.address, '');
  const port = numberOr(socket.port_value, 0);
  if (!ip) report.error(`${at}.address`, 'required field missing', 'missing');
  else checkIpLiteral(ip, `${at}.address`, report, 'sink');
  if (port < 1 || port > 65535)
    report.error(`${at}.port_value`, `${port} is not a port a sink can send to (1..65535)`);
  return { kind: 'udp', ip, port };
}

function statsdSink(raw: JsonObject, path: string, report: Report, dog: boolean): StatsdSinkSpec | null {
  checkFields(
    raw,
    path,
    report,
    dog ? DOG_STATSD_FIELDS : STATSD_FIELDS,
    dog ? 'DogStatsdSink' : 'StatsdSink',
  );
  const cluster = dog ? '' : stringOr(raw.tcp_cluster_name, '');
  let target: StatsdSinkSpec['target'] | null = null;
  if (raw.address !== undefined) target = udpAddress(objectOf(raw.address), `${path}.address`, report);
  else if (cluster) target = { kind: 'tcp', cluster };
  else
    report.error(
      `${path}.address`,
      dog ? 'required field missing' : 'required: address (UDP) or tcp_cluster_name (TCP)',
      'missing',
    );
  const max = raw.max_bytes_per_datagram;
  if (max !== undefined && numberOr(max, 0) <= 0)
    report.error(`${path}.max_bytes_per_datagram`, 'must be greater than 0');
  if (!target) return null;
  return {
    kind: 'statsd',
    target,
    prefix: stringOr(raw.prefix, '') || DEFAULT_STATSD_PREFIX,
    tagged: dog,
    maxDatagramBytes: numberOr(max, 0),
  };
}

/**
 * The sinks of `stats_sinks` that send (the hystrix sink is not one), each with its findings
 * in `report`; a TCP sink's cluster must be a static one, known when the sinks are made, as
 * in the reference.
 */
export function compileStatsSinks(bootstrap: JsonObject, report: Report): StatsSinkSpec[] {
  const out: StatsSinkSpec[] = [];
  const clusters = new Map(
    arrayOf(objectOf(bootstrap.static_resources).clusters).map((c) => [objectOf(c).name, objectOf(c)]),
  );
  /**
   * Whether `name` is a static cluster the sink can dial: known when the sinks are made, as in
   * the reference; a TCP statsd sink dials in plain text, so its TLS is refused, not skipped.
   */
  const dialable = (name: string, at: string, plainOnly: boolean): boolean => {
    const cluster = clusters.get(name);
    if (!cluster || cluster.type === 'EDS') report.error(at, `unknown cluster '${name}' (a static cluster)`);
    else if (plainOnly && (cluster.transport_socket !== undefined || cluster.tls_context !== undefined))
      report.unsupported(
        at,
        `TLS to a tcp statsd cluster ('${name}' has a transport socket) is not implemented`,
      );
    else return true;
    return false;
  };
  for (const [i, entry] of arrayOf(bootstrap.stats_sinks).entries()) {
    const sink = objectOf(entry);
    const type = configTypeOf(sink);
    const path = `stats_sinks[${i}].typed_config`;
    const raw = objectOf(sink.typed_config);
    if (type === CONFIG_TYPE.metricsService) {
      const spec = metricsServiceSink(raw, path, report);
      const at = `${path}.grpc_service.envoy_grpc.cluster_name`;
      if (spec && (spec.service.kind !== 'cluster' || dialable(spec.service.cluster, at, false)))
        out.push(spec);
      continue;
    }
    if (type !== CONFIG_TYPE.statsdSink && type !== CONFIG_TYPE.dogStatsdSink) continue;
    const spec = statsdSink(raw, path, report, type === CONFIG_TYPE.dogStatsdSink);
    const at = `${path}.tcp_cluster_name`;
    if (spec && (spec.target.kind !== 'tcp' || dialable(spec.target.cluster, at, true))) out.push(spec);
  }
  return out;
}

/** The sinks of a bootstrap already validated (none when its sinks have findings). */
export function statsSinksOf(bootstrap: JsonObject): StatsSinkSpec[] {
  const report = new Report('stats_sinks');
  const sinks = compileStatsSinks(bootstrap, report);
  return report.failed ? [] : sinks;
}
