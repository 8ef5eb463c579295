import type { Json, JsonObject } from '../../events/index.js';
import { arrayOf, durationMs, objectOf } from '../../reducers/settings/values.js';
import { compileCluster } from '../config/cluster.js';
import { checkBootstrapSources } from '../config/dynamic-resources.js';
import { compileOutlierEventLog } from '../config/health.js';
import { checkIpLiteral } from '../config/ip-literal.js';
import { compileListener } from '../config/listener.js';
import { duplicateAddresses, duplicateAddressMessage } from '../config/listener-addresses.js';
import { checkLoadStatsConfig } from '../config/load-reporting.js';
import { compileOverloadManager } from '../config/overload.js';
import { checkRouteClusters, inlineRouteConfigs } from '../config/route-clusters.js';
import { compileStatsConfig } from '../config/histogram-buckets.js';
import { checkSecret } from '../config/secret.js';
import { staticSecrets } from '../config/secrets.js';
import { compileStatsSinks } from '../config/stats-sinks.js';
import { compileAccessLogs } from '../dataplane/access-log/config.js';
import { compileBootstrapTracing, tracerCluster } from '../dataplane/tracing/config.js';
import { compileApplicationLogConfig } from './application-log.js';
import { compileBootstrapExtensions, compileDefaultRegexEngine } from './bootstrap-extensions.js';
import { acting, checkFields, type FieldTable, notYet } from './honoured.js';
import type { Report } from './report.js';

/**
 * Names unnamed static listeners `listener_<index>` (index in `static_resources.listeners`),
 * skipping names already taken. The reference allocates a UUID instead; an index keeps
 * replays and config dumps deterministic.
 */
export function nameListeners(bootstrap: JsonObject): void {
  // Raw reads by design: this runs before any compile step and writes the name into the
  // config itself, so validate, serve, the config dump and replays all see the same name.
  const listeners = arrayOf(objectOf(bootstrap.static_resources).listeners);
  const taken = new Set(listeners.map((l) => objectOf(l).name).filter((n) => typeof n === 'string'));
  listeners.forEach((l, i) => {
    const listener = objectOf(l);
    if (listener.name) return;
    let name = `listener_${i}`;
    for (let n = 1; taken.has(name); n++) name = `listener_${i}_${n}`;
    taken.add(name);
    listener.name = name;
  });
}

function checkUnique(items: Json[], what: string, p: string, report: Report): void {
  const seen = new Map<string, number>();
  items.forEach((item, i) => {
    const name = objectOf(item).name;
    if (typeof name !== 'string' || name === '') return;
    const first = seen.get(name);
    if (first === undefined) seen.set(name, i);
    else
      report.error(`${p}[${i}].name`, `duplicate ${what} name '${name}' (first defined at ${p}[${first}])`);
  });
}

/**
 * The compile steps of every static resource, exactly as serve runs them: clusters, then
 * listeners (with their filter chains, HTTP connection managers, routes and filters), then
 * the whole-bootstrap fields. Every finding goes to `report`.
 */
export function validateBootstrap(bootstrap: JsonObject, report: Report): void {
  checkFields(bootstrap, '', report, BOOTSTRAP_FIELDS, 'Bootstrap');
  const resources = objectOf(bootstrap.static_resources);
  checkFields(resources, 'static_resources', report, STATIC_FIELDS, 'StaticResources');
  const secretList = arrayOf(resources.secrets);
  for (const [i, s] of secretList.entries())
    checkSecret(objectOf(s), `static_resources.secrets[${i}]`, report);
  checkUnique(secretList, 'secret', 'static_resources.secrets', report);
  const secrets = staticSecrets(bootstrap);
  const clusters = arrayOf(resources.clusters);
  for (const [i, c] of clusters.entries())
    compileCluster(objectOf(c), `static_resources.clusters[${i}]`, { report, secrets });
  checkUnique(clusters, 'cluster', 'static_resources.clusters', report);
  const listeners = arrayOf(resources.listeners);
  // As the reference: an inline route table is checked against the clusters known when it
  // loads, the static ones (CDS has delivered none yet).
  const known = new Set(clusters.map((c) => objectOf(c).name).filter((n) => typeof n === 'string'));
  for (const [i, l] of listeners.entries()) {
    const path = `static_resources.listeners[${i}]`;
    compileListener(objectOf(l), path, { report, secrets });
    for (const table of inlineRouteConfigs(objectOf(l), path))
      checkRouteClusters(table.config, table.path, report, known, true);
  }
  checkUnique(listeners, 'listener', 'static_resources.listeners', report);
  const named = listeners.map((l) => ({ name: String(objectOf(l).name ?? ''), config: objectOf(l) }));
  for (const d of duplicateAddresses(named))
    report.error(`static_resources.listeners[${d.index}].address`, duplicateAddressMessage(d));
  checkBootstrapSources(bootstrap, report, checkLoadStatsConfig(bootstrap, report));
  if (bootstrap.tracing !== undefined) {
    const tracer = compileBootstrapTracing(objectOf(bootstrap.tracing), 'tracing', report);
    // As the reference: the collector cluster must be known when the tracer is made (CDS may bring it).
    const [collector, field] = tracer === null ? ['', ''] : tracerCluster(tracer);
    const cds = objectOf(bootstrap.dynamic_resources).cds_config !== undefined;
    if (collector && !cds && !clusters.some((c) => objectOf(c).name === collector))
      report.error(`tracing.http.typed_config.${field}`, `unknown cluster '${collector}'`);
  }
  if (bootstrap.overload_manager !== undefined)
    compileOverloadManager(objectOf(bootstrap.overload_manager), 'overload_manager', report);
  checkAdmin(objectOf(bootstrap.admin), report);
  compileStatsSinks(bootstrap, report);
  compileStatsConfig(objectOf(bootstrap.stats_config), 'stats_config', report);
  checkFields(
    objectOf(bootstrap.cluster_manager),
    'cluster_manager',
    report,
    CLUSTER_MANAGER_FIELDS,
    'ClusterManager',
  );
  const localCluster = objectOf(bootstrap.cluster_manager).local_cluster_name;
  // As the reference: the local cluster must be a static one, known before any discovery.
  if (
    typeof localCluster === 'string' &&
    localCluster &&
    !clusters.some((c) => objectOf(c).name === localCluster)
  )
    report.error(
      'cluster_manager.local_cluster_name',
      `local cluster '${localCluster}' must be defined in static_resources.clusters`,
    );
  const outlierLog = objectOf(bootstrap.cluster_manager).outlier_detection;
  if (outlierLog !== undefined)
    compileOutlierEventLog(objectOf(outlierLog), 'cluster_manager.outlier_detection', report);
  checkStatsFlushInterval(bootstrap.stats_flush_interval, report);
  compileBootstrapExtensions(bootstrap.bootstrap_extensions, report);
  compileDefaultRegexEngine(bootstrap.default_regex_engine, report);
  compileApplicationLogConfig(bootstrap, report);
}

/**
 * The reference's rule (`gte 1ms, lt 300s`): the flush is an interval timer, and past 2^31-1 ms
 * Node fires it every millisecond.
 */
function checkStatsFlushInterval(value: Json | undefined, report: Report): void {
  if (value === undefined) return;
  const ms = durationMs(value, Number.NaN);
  if (!(ms >= 1 && ms < 300_000))
    report.error('stats_flush_interval', `must be at least 0.001s and less than 300s, got ${String(value)}`);
}

const BOOTSTRAP_FIELDS: FieldTable = {
  ...acting('node', 'static_resources', 'admin', 'cluster_manager', 'stats_config', 'stats_sinks'),
  ...acting('stats_flush_interval', 'stats_flush_on_admin', 'stats_server_version_override'),
  ...acting('runtime', 'layered_runtime', 'dynamic_resources'),
  // No watchdog or flags directory here; both only guard behaviour this build lacks.
  watchdog: 'advise',
  flags_path: 'advise',
  enable_dispatcher_stats: 'advise',
  hds_config: notYet('health discovery (HDS)'),
  // The tracer of every HCM whose `tracing` names no provider (src/dataplane/tracing/).
  tracing: 'act',
  // src/edges/overload/: monitors read by an edge, actions taken by the data plane.
  overload_manager: 'act',
  // ./bootstrap-extensions.ts and ./application-log.ts.
  ...acting('bootstrap_extensions', 'default_regex_engine', 'application_log_config'),
  // Envoy Gateway and Istio ask to create each stat on its first use, which saves the
  // reference memory; here every stat is made with its resource either way.
  deferred_stat_options: 'advise',
};
const STATIC_FIELDS: FieldTable = {
  ...acting('listeners', 'clusters', 'secrets'),
};
const CLUSTER_MANAGER_FIELDS: FieldTable = {
  // Its event log; the detectors themselves are configured per cluster.
  outlier_detection: 'act',
  // Zone-aware routing's local cluster (src/upstream/cluster-manager.ts).
  local_cluster_name: 'act',
  upstream_bind_config: notYet('a manager-wide upstream_bind_config (set it per cluster)'),
  // Load reports to a gRPC management server (src/edges/xds/lrs/).
  load_stats_config: 'act',
  // Istio's: the reference builds a cluster's state on its first use to save memory; here
  // every cluster is built when it arrives, which behaves the same.
  enable_deferred_cluster_creation: 'advise',
};
const ADMIN_FIELDS: FieldTable = acting('access_log_path', 'access_log', 'profile_path', 'address');

/** The field tables of this compile step, by the message name its findings use (docs/bootstrap.md lists them). */
export const FIELD_TABLES = {
  Bootstrap: BOOTSTRAP_FIELDS,
  StaticResources: STATIC_FIELDS,
  ClusterManager: CLUSTER_MANAGER_FIELDS,
  Admin: ADMIN_FIELDS,
};

/**
 * Every admin field acts: `access_log_path` and v3's `access_log` are where admin requests
 * are logged (src/admin/access-log.ts); `address` is an IP the admin binds, as a listener's, or a
 * `pipe` (src/admin/pipe.ts), whose `mode` is permission bits and means nothing for an abstract
 * (`@`) socket.
 */
function checkAdmin(admin: JsonObject, report: Report): void {
  checkFields(admin, 'admin', report, ADMIN_FIELDS, 'Admin');
  compileAccessLogs(admin.access_log, 'admin.access_log', report);
  const socket = objectOf(objectOf(admin.address).socket_address);
  checkIpLiteral(socket.address, 'admin.address.socket_address.address', report, 'admin');
  const pipe = objectOf(objectOf(admin.address).pipe);
  const path = typeof pipe.path === 'string' ? pipe.path : '';
  const mode = Number(pipe.mode ?? 0);
  if (objectOf(admin.address).pipe !== undefined && !path)
    report.error('admin.address.pipe.path', 'required field missing', 'missing');
  if (mode > 0o777)
    report.error('admin.address.pipe.mode', `${mode} is more than 0777 (511): mode is permission bits`);
  if (path.startsWith('@') && mode !== 0)
    report.error(
      'admin.address.pipe.mode',
      'an abstract socket (@...) has no file, so no mode: leave mode unset',
    );
}
