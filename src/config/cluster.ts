/**
 * The Cluster's one compile step: its rules, and the value every consumer reads (settings,
 * health checks, outlier detection, connection options). `--mode validate`, the bootstrap
 * and cluster discovery run `compileCluster`; the data plane and the edges read
 * `compiledCluster(config)`, which is the same value, found by the config's identity.
 */
import type { Json, JsonObject, RawCluster } from '../../events/index.js';
import { edsServiceName } from '../../reducers/discovery.js';
import { type ClusterSettings, clusterSettings } from '../../reducers/settings/cluster.js';
import { arrayOf, durationMs, numberOr, objectOf } from '../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable, notYet } from '../bootstrap/honoured.js';
import { Report } from '../bootstrap/report.js';
import { compileClusterTls } from './cluster-tls.js';
import type { Compiled, CompileOptions } from './compiled.js';
import { type ConfigSourceSpec, compileConfigSource, configSourceOf } from './config-source.js';
import { compileHttp2Options, type Http2Options } from './h2-options.js';
import {
  compileHealthCheck,
  compileOutlierDetection,
  type HealthCheckSettings,
  type OutlierSettings,
} from './health.js';
import { checkIpLiteral } from './ip-literal.js';
import { compileClusterLoadAssignment, LOAD_ASSIGNMENT_TABLES } from './load-assignment.js';
import { NO_SECRETS, type Secrets } from './secrets.js';

/** The reference's ring size limit (8M entries) for both minimum and maximum. */
export const MAX_RING_SIZE = 8_388_608;
const DEFAULT_MIN_RING = 1024;

const MEMBERS_REQUIRED = new Set(['STATIC', 'STRICT_DNS', 'LOGICAL_DNS']);

function obj(value: Json | undefined): JsonObject | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? value : undefined;
}

function int(value: Json | undefined, fallback: number): number {
  return value === undefined ? fallback : Number(value);
}

/** Socket options of a cluster's upstream connections (its TLS context is `clusterTls`, cluster-tls.ts). */
export interface UpstreamConnection {
  /** `upstream_bind_config.source_address`; null: no bind. */
  localAddress: string | null;
  localPort: number;
  /** `upstream_connection_options.tcp_keepalive` set. */
  keepAlive: boolean;
  keepAliveInitialDelayMs: number;
  /** `common_http_protocol_options.idle_timeout`: a pooled connection unused this long closes (0: never). */
  idleTimeoutMs: number;
  /** `http2_protocol_options`: the SETTINGS and connection window of its HTTP/2 sessions. */
  http2: Http2Options;
}

/**
 * What a Cluster compiles to. Its TLS context is not part of it: that depends on the secrets
 * of the moment (SDS rotates them), so `clusterTls` makes it from the config and the secrets.
 */
export interface CompiledCluster {
  /** The defaults of the spec applied, in the data plane's units (the pure half, which reducers and views derive too). */
  settings: ClusterSettings;
  /** `health_checks`, each compiled; empty when none. */
  checks: HealthCheckSettings[];
  /** `outlier_detection`; null when not configured. */
  outlier: OutlierSettings | null;
  connection: UpstreamConnection;
  /** An EDS cluster's endpoint source: the service it asks for and where from; null for other types. */
  eds: EdsSource | null;
}

export interface EdsSource {
  /** `eds_cluster_config.service_name`, else the cluster's name. */
  serviceName: string;
  /** `eds_cluster_config.eds_config`; null when it does not compile (refused where the cluster was). */
  source: ConfigSourceSpec | null;
}

const ONE_HOUR_MS = 3_600_000;

const compiled = new WeakMap<RawCluster, CompiledCluster>();

/**
 * Compiles one Cluster (canonical form); `path` names it in findings, e.g.
 * `static_resources.clusters[2]` (empty for a discovered resource, which is its own base).
 * The value is kept by the config's identity, for `compiledCluster`.
 */
export function compileCluster(
  raw: JsonObject,
  path: string,
  options: CompileOptions = {},
): Compiled<CompiledCluster> {
  const report = options.report ?? new Report(path);
  checkRules(raw, path, report, options.secrets ?? NO_SECRETS);
  const value = compileValue(raw, path, report);
  if (typeof raw.name === 'string') compiled.set(raw as RawCluster, value);
  return { value, findings: report };
}

/**
 * The compiled value of a cluster config that was accepted: the one its compile step made
 * (same object), or, for a copy (a worker's snapshot, a replay), compiled once now. Its
 * findings were reported when it was accepted.
 */
export function compiledCluster(raw: RawCluster): CompiledCluster {
  const hit = compiled.get(raw);
  if (hit) return hit;
  // The rules (and the TLS context they load) were checked where the config was accepted.
  const value = compileValue(raw, raw.name, new Report(raw.name));
  compiled.set(raw, value);
  return value;
}

function compileValue(raw: JsonObject, p: string, report: Report): CompiledCluster {
  const outlier = obj(raw.outlier_detection);
  return {
    settings: clusterSettings(raw as RawCluster),
    checks: arrayOf(raw.health_checks).map((hc, i) =>
      compileHealthCheck(obj(hc) ?? {}, `${p}.health_checks[${i}]`, report),
    ),
    outlier: outlier ? compileOutlierDetection(outlier, `${p}.outlier_detection`, report) : null,
    connection: connectionOf(raw, p, report),
    eds: raw.type === 'EDS' ? edsSourceOf(raw as RawCluster) : null,
  };
}

function edsSourceOf(raw: RawCluster): EdsSource {
  const eds = objectOf(objectOf(raw.eds_cluster_config).eds_config);
  return { serviceName: edsServiceName(raw), source: configSourceOf(eds) };
}

function connectionOf(raw: JsonObject, p: string, report: Report): UpstreamConnection {
  const source = objectOf(objectOf(raw.upstream_bind_config).source_address);
  const keepalive = objectOf(raw.upstream_connection_options).tcp_keepalive;
  return {
    localAddress: typeof source.address === 'string' && source.address !== '' ? source.address : null,
    localPort: numberOr(source.port_value, 0),
    keepAlive: keepalive !== undefined,
    keepAliveInitialDelayMs: numberOr(objectOf(keepalive).keepalive_time, 0) * 1000,
    idleTimeoutMs: Math.max(
      0,
      durationMs(objectOf(raw.common_http_protocol_options).idle_timeout, ONE_HOUR_MS),
    ),
    http2: compileHttp2Options(obj(raw.http2_protocol_options) ?? {}, `${p}.http2_protocol_options`, report),
  };
}

/**
 * Rules of the Cluster message beyond its shape (the walk already checked fields, enums,
 * oneofs, percents and negative durations).
 */
function checkRules(cluster: JsonObject, p: string, report: Report, secrets: Secrets): void {
  if (typeof cluster.name !== 'string' || cluster.name === '') {
    report.error(`${p}.name`, 'required field missing: every cluster needs a unique name');
  }
  const type = cluster.cluster_type !== undefined ? 'custom' : String(cluster.type ?? 'STATIC');
  const lbPolicy = String(cluster.lb_policy ?? 'ROUND_ROBIN');
  checkLbConfig(cluster, p, lbPolicy, report);
  checkMembers(cluster, p, type, report);
  if (cluster.eds_cluster_config !== undefined && type !== 'EDS') {
    report.error(`${p}.eds_cluster_config`, `is valid only with type EDS (this cluster is ${type})`);
  }
  if (type === 'EDS') checkEdsConfig(obj(cluster.eds_cluster_config), `${p}.eds_cluster_config`, report);
  // The reference pairs ORIGINAL_DST with ORIGINAL_DST_LB, or with CLUSTER_PROVIDED (the
  // cluster brings its own balancer); anything else is a contradiction.
  const ownBalancer = lbPolicy === 'ORIGINAL_DST_LB' || lbPolicy === 'CLUSTER_PROVIDED';
  if (type === 'ORIGINAL_DST' ? !ownBalancer : lbPolicy === 'ORIGINAL_DST_LB') {
    report.error(
      `${p}.lb_policy`,
      `type ORIGINAL_DST takes lb_policy ORIGINAL_DST_LB or CLUSTER_PROVIDED, and ORIGINAL_DST_LB only goes with it (found lb_policy ${lbPolicy}, type ${type})`,
    );
  }
  if (lbPolicy === 'CLUSTER_PROVIDED' && type !== 'ORIGINAL_DST' && type !== 'custom')
    report.error(
      `${p}.lb_policy`,
      `CLUSTER_PROVIDED needs a cluster that provides its balancer; type ${type} does not`,
    );
  checkFields(cluster, p, report, CLUSTER_FIELDS, 'Cluster');
  checkSubsetConfig(cluster, p, lbPolicy, report);
  checkOriginalDst(cluster, p, type, report);
  const http1 = obj(cluster.http_protocol_options);
  if (http1)
    checkFields(http1, `${p}.http_protocol_options`, report, HTTP1_OPTIONS_FIELDS, 'Http1ProtocolOptions');
  compileClusterTls(cluster, p, report, secrets);
  refuseUnservedKinds(cluster, p, lbPolicy, report);
  if (cluster.connect_timeout === '0s') report.error(`${p}.connect_timeout`, 'must be greater than 0s');
  const custom = obj(cluster.cluster_type);
  if (custom && !custom.name) report.error(`${p}.cluster_type.name`, 'required field missing');
}

const CLUSTER_FIELDS: FieldTable = {
  ...acting('name', 'alt_stat_name', 'type', 'lb_policy', 'connect_timeout', 'load_assignment', 'hosts'),
  ...acting('per_connection_buffer_limit_bytes', 'max_requests_per_connection', 'circuit_breakers'),
  ...acting('http2_protocol_options', 'protocol_selection', 'common_http_protocol_options'),
  // HTTP/1.1 upstream, this build's default; its settings are checked by their own table.
  http_protocol_options: 'act',
  ...acting('dns_refresh_rate', 'respect_dns_ttl', 'dns_lookup_family', 'dns_resolvers'),
  ...acting('ring_hash_lb_config', 'least_request_lb_config', 'common_lb_config'),
  ...acting('upstream_bind_config', 'upstream_connection_options', 'transport_socket', 'eds_cluster_config'),
  // Clean-up of ORIGINAL_DST hosts (the cluster manager's sweeper).
  ...acting('cleanup_interval'),
  metadata: 'advise',
  cluster_type: notYet('custom cluster types'),
  // Compiled by compileClusterTls (src/tls), with the transport socket.
  tls_context: 'act',
  ...acting('health_checks', 'outlier_detection'),
  // TCP proxy connections to a host that turns unhealthy are dropped (src/dataplane/tcp/proxy.ts).
  ...acting('close_connections_on_host_health_failure'),
  // Without it, members discovery drops stay while they pass their checks (reducers/clusters.ts).
  ...acting('drain_connections_on_host_removal'),
  // Compiled by checkSubsetConfig; the balancer is src/upstream/lb/subset.ts.
  lb_subset_config: 'act',
  // Compiled by checkOriginalDst; the balancer is src/upstream/lb/original-dst.ts.
  original_dst_lb_config: 'act',
  // The reference ignores it too (gRPC's xDS clients read it); its load reports go to cluster_manager.load_stats_config.
  lrs_server: notYet("a cluster's own lrs_server (load reports go to cluster_manager.load_stats_config)"),
  filters: notYet('upstream network filters'),
  // v3's typed policy, lowered onto lb_policy and the balancers' fields by src/config/lb-policy.ts.
  load_balancing_policy: 'act',
  upstream_http_protocol_options: notYet('upstream_http_protocol_options (auto SNI, SAN checks)'),
};
/** A cluster's `http_protocol_options`: what an upstream HTTP/1.1 connection takes from it. */
const HTTP1_OPTIONS_FIELDS: FieldTable = {
  // The reference reads these on downstream connections only; on a cluster they do nothing.
  allow_absolute_url: 'advise',
  accept_http_10: 'advise',
  default_host_for_http_10: 'advise',
  // An invalid upstream response always ends its connection: framing is lost.
  override_stream_error_on_invalid_http_message: 'advise',
  allow_chunked_length: notYet(
    'allow_chunked_length (a response with both Content-Length and Transfer-Encoding is refused)',
  ),
  header_key_format: notYet('header_key_format (upstream header case)'),
  enable_trailers: notYet('enable_trailers (HTTP/1.1 trailers)'),
};
const COMMON_LB_FIELDS: FieldTable = {
  ...acting('healthy_panic_threshold', 'update_merge_window'),
  // Balancers: src/upstream/lb/locality.ts.
  zone_aware_lb_config: 'act',
  locality_weighted_lb_config: 'act',
  consistent_hashing_lb_config: notYet('consistent_hashing_lb_config'),
  ignore_new_hosts_until_first_hc: 'act',
  close_connections_on_host_set_change: notYet('close_connections_on_host_set_change'),
};

/** Kinds of cluster a later piece of work makes act; until then they are refused by name. */
function refuseUnservedKinds(cluster: JsonObject, p: string, lbPolicy: string, report: Report): void {
  if (lbPolicy === 'LOAD_BALANCING_POLICY_CONFIG')
    report.unsupported(`${p}.lb_policy`, 'LOAD_BALANCING_POLICY_CONFIG is not implemented');
  const common = obj(cluster.common_lb_config);
  if (common) checkFields(common, `${p}.common_lb_config`, report, COMMON_LB_FIELDS, 'CommonLbConfig');
}

const EDS_CLUSTER_FIELDS: FieldTable = acting('eds_config', 'service_name');
const SUBSET_FIELDS: FieldTable = {
  ...acting('fallback_policy', 'default_subset', 'subset_selectors', 'list_as_any', 'panic_mode_any'),
  ...acting('locality_weight_aware', 'scale_locality_weight'),
};
const SUBSET_SELECTOR_FIELDS: FieldTable = acting('keys', 'fallback_policy');
const ORIGINAL_DST_FIELDS: FieldTable = acting('use_http_header');

/** `original_dst_lb_config`, with the spec's warning about the header it trusts. */
function checkOriginalDst(cluster: JsonObject, p: string, type: string, report: Report): void {
  const config = obj(cluster.original_dst_lb_config);
  if (!config) return;
  const at = `${p}.original_dst_lb_config`;
  checkFields(config, at, report, ORIGINAL_DST_FIELDS, 'OriginalDstLbConfig');
  if (type !== 'ORIGINAL_DST')
    report.warn(at, `has no effect: the cluster's type is ${type}, not ORIGINAL_DST`);
  else if (config.use_http_header === true)
    report.warn(
      `${at}.use_http_header`,
      "the x-proxy-original-dst-host (and x-envoy-original-dst-host) header is not sanitized: any HTTP client of this cluster's routes can send requests to any host and port; use it only behind a proxy that sets or strips the header",
    );
}

/** `lb_subset_config`: its fields, selectors that name keys, and a balancer it can wrap. */
function checkSubsetConfig(cluster: JsonObject, p: string, lbPolicy: string, report: Report): void {
  const subset = obj(cluster.lb_subset_config);
  if (!subset) return;
  const at = `${p}.lb_subset_config`;
  checkFields(subset, at, report, SUBSET_FIELDS, 'LbSubsetConfig');
  if (lbPolicy === 'ORIGINAL_DST_LB' || lbPolicy === 'CLUSTER_PROVIDED')
    report.error(at, `subsets need a balancer to wrap; lb_policy ${lbPolicy} has none`);
  arrayOf(subset.subset_selectors).forEach((raw, i) => {
    const selector = obj(raw) ?? {};
    checkFields(selector, `${at}.subset_selectors[${i}]`, report, SUBSET_SELECTOR_FIELDS, 'LbSubsetSelector');
    if (arrayOf(selector.keys).length === 0)
      report.error(`${at}.subset_selectors[${i}].keys`, 'a selector needs at least one key', 'missing');
  });
}

/** The field tables of this compile step, by the message name its findings use (docs/bootstrap.md lists them). */
export const FIELD_TABLES = {
  Cluster: CLUSTER_FIELDS,
  Http1ProtocolOptions: HTTP1_OPTIONS_FIELDS,
  CommonLbConfig: COMMON_LB_FIELDS,
  EdsClusterConfig: EDS_CLUSTER_FIELDS,
  LbSubsetConfig: SUBSET_FIELDS,
  LbSubsetSelector: SUBSET_SELECTOR_FIELDS,
  OriginalDstLbConfig: ORIGINAL_DST_FIELDS,
  ...LOAD_ASSIGNMENT_TABLES,
};

function checkEdsConfig(eds: JsonObject | undefined, p: string, report: Report): void {
  if (!eds || eds.eds_config === undefined) {
    report.error(`${p}.eds_config`, 'required field missing: where the endpoints come from', 'missing');
    return;
  }
  checkFields(eds, p, report, EDS_CLUSTER_FIELDS, 'EdsClusterConfig');
  compileConfigSource(obj(eds.eds_config) ?? {}, `${p}.eds_config`, report);
}

function checkLbConfig(cluster: JsonObject, p: string, lbPolicy: string, report: Report): void {
  const ring = obj(cluster.ring_hash_lb_config);
  if (ring) {
    if (lbPolicy !== 'RING_HASH') {
      report.error(
        `${p}.ring_hash_lb_config`,
        `set but lb_policy is ${lbPolicy}; it needs lb_policy RING_HASH`,
      );
    }
    const min = int(ring.minimum_ring_size, DEFAULT_MIN_RING);
    const max = int(ring.maximum_ring_size, MAX_RING_SIZE);
    if (min > MAX_RING_SIZE) {
      report.error(
        `${p}.ring_hash_lb_config.minimum_ring_size`,
        `${min} exceeds the limit ${MAX_RING_SIZE} (8M)`,
      );
    }
    if (max > MAX_RING_SIZE) {
      report.error(
        `${p}.ring_hash_lb_config.maximum_ring_size`,
        `${max} exceeds the limit ${MAX_RING_SIZE} (8M)`,
      );
    }
    if (min > max) {
      report.error(
        `${p}.ring_hash_lb_config`,
        `ring hash: minimum_ring_size (${min}) > maximum_ring_size (${max})`,
      );
    }
  }
  const leastRequest = obj(cluster.least_request_lb_config);
  if (leastRequest) {
    if (lbPolicy !== 'LEAST_REQUEST') {
      report.error(
        `${p}.least_request_lb_config`,
        `set but lb_policy is ${lbPolicy}; it needs lb_policy LEAST_REQUEST`,
      );
    }
    const choices = int(leastRequest.choice_count, 2);
    if (choices < 2)
      report.error(`${p}.least_request_lb_config.choice_count`, `${choices} is below the minimum 2`);
  }
}

function checkMembers(cluster: JsonObject, p: string, type: string, report: Report): void {
  const assignment = obj(cluster.load_assignment);
  const hosts = arrayOf(cluster.hosts);
  if (hosts.length > 0 && assignment) {
    report.warn(`${p}.hosts`, 'ignored: load_assignment is also set and overrides the deprecated hosts');
  }
  const ipOnly = type === 'STATIC';
  const members = assignment
    ? compileClusterLoadAssignment(assignment, `${p}.load_assignment`, { report, ipOnly }).value.length
    : hosts.length;
  if (ipOnly && !assignment)
    hosts.forEach((h, i) => {
      checkIpLiteral(
        obj(obj(h)?.socket_address)?.address,
        `${p}.hosts[${i}].socket_address.address`,
        report,
        'endpoint',
      );
    });
  if (MEMBERS_REQUIRED.has(type) && !assignment && hosts.length === 0) {
    report.error(p, `a ${type} cluster needs members: set load_assignment (or the deprecated hosts)`);
  }
  if (type === 'LOGICAL_DNS' && members > 1) {
    report.error(p, `a LOGICAL_DNS cluster takes exactly one member (found ${members})`);
  }
  if (type === 'ORIGINAL_DST' && members > 0) {
    report.error(p, 'an ORIGINAL_DST cluster takes no members (its hosts come from connections)');
  }
}
