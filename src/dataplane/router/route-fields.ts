/**
 * What a route table's compile step honours, message by message: each field acts, is advised
 * or is refused by name (docs/bootstrap.md lists these tables).
 */
import type { JsonObject } from '../../../events/config.js';
import { listOf, objectOf } from '../../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable, notYet } from '../../bootstrap/honoured.js';
import type { Report } from '../../bootstrap/report.js';
import { FIELD_TABLES as CORS_FIELD_TABLES } from '../http/cors.js';
import { ROUTE_RATE_LIMIT_TABLES } from '../http/filters/ratelimit/route-policy.js';
import { FIELD_TABLES as HEADER_FIELD_TABLES, HEADER_MUTATION_FIELDS } from './header-mutation.js';
import { MIRROR_FIELDS } from './mirror.js';
import { FIELD_TABLES as UPGRADE_FIELD_TABLES } from './upgrade-config.js';

export const ROUTE_CONFIG_FIELDS: FieldTable = {
  ...acting('name', 'virtual_hosts', ...HEADER_MUTATION_FIELDS, 'internal_only_headers'),
  // Checked against the known clusters where the table loads (src/config/route-clusters.ts).
  validate_clusters: 'act',
};
export const VIRTUAL_HOST_FIELDS: FieldTable = acting(
  'name',
  'domains',
  'routes',
  'retry_policy',
  ...HEADER_MUTATION_FIELDS,
  'cors',
  'per_filter_config',
  'typed_per_filter_config',
  'rate_limits',
  'metadata',
);
const ROUTE_FIELDS: FieldTable = {
  ...acting(
    'name',
    'match',
    'route',
    'redirect',
    'direct_response',
    ...HEADER_MUTATION_FIELDS,
    'per_filter_config',
    'typed_per_filter_config',
    'decorator',
  ),
  metadata: 'act',
};
/** A route's or virtual host's `metadata.filter_metadata` (the loader made it plain JSON); null for none. */
export function compileFilterMetadata(owner: JsonObject): JsonObject | null {
  const filters = objectOf(objectOf(owner.metadata).filter_metadata);
  return Object.keys(filters).length === 0 ? null : filters;
}

/** `decorator`: the operation that names the span (src/dataplane/tracing/tracer.ts). */
export function compileDecorator(raw: JsonObject, where: string, report: Report): string | null {
  checkFields(raw, where, report, DECORATOR_FIELDS, 'Decorator');
  if (typeof raw.operation === 'string' && raw.operation) return raw.operation;
  report.error(`${where}.operation`, 'required field missing', 'missing');
  return null;
}

export const DECORATOR_FIELDS: FieldTable = {
  operation: 'act',
  propagate: notYet('decorator propagate (the operation sent upstream in x-proxy-decorator-operation)'),
};

const MATCH_FIELDS: FieldTable = acting(
  'prefix',
  'path',
  'regex',
  'safe_regex',
  'case_sensitive',
  'headers',
  'query_parameters',
  'grpc',
);
const ACTION_FIELDS: FieldTable = {
  ...acting(
    'cluster',
    'weighted_clusters',
    'cluster_header',
    'prefix_rewrite',
    'host_rewrite',
    'timeout',
    'idle_timeout',
    'retry_policy',
    'hash_policy',
    'cluster_not_found_response_code',
    'priority',
    'metadata_match',
    'upgrade_configs',
    'cors',
    'rate_limits',
    'include_vh_rate_limits',
    'request_mirror_policies',
    'request_mirror_policy',
  ),
  auto_host_rewrite: notYet('auto_host_rewrite (the Host of the chosen DNS host)'),
};
const WEIGHTED_FIELDS: FieldTable = acting('clusters', 'total_weight');
const CLUSTER_WEIGHT_FIELDS: FieldTable = {
  ...acting('name', 'weight', 'metadata_match', ...HEADER_MUTATION_FIELDS),
};

/** The field tables of this compile step, by the message name its findings use (docs/bootstrap.md lists them). */
export const FIELD_TABLES = {
  RouteConfiguration: ROUTE_CONFIG_FIELDS,
  VirtualHost: VIRTUAL_HOST_FIELDS,
  Route: ROUTE_FIELDS,
  RouteMatch: MATCH_FIELDS,
  RouteAction: ACTION_FIELDS,
  WeightedCluster: WEIGHTED_FIELDS,
  ClusterWeight: CLUSTER_WEIGHT_FIELDS,
  Decorator: DECORATOR_FIELDS,
  'RouteAction.RequestMirrorPolicy': MIRROR_FIELDS,
  ...HEADER_FIELD_TABLES,
  ...UPGRADE_FIELD_TABLES,
  ...CORS_FIELD_TABLES,
  ...ROUTE_RATE_LIMIT_TABLES,
};

/** Refuses the fields of a route this build does not honour, message by message. */
export function checkRouteFields(raw: JsonObject, where: string, report: Report): void {
  checkFields(raw, where, report, ROUTE_FIELDS, 'Route');
  checkFields(objectOf(raw.match), `${where}.match`, report, MATCH_FIELDS, 'RouteMatch');
  if (raw.route === undefined) return;
  const action = objectOf(raw.route);
  checkFields(action, `${where}.route`, report, ACTION_FIELDS, 'RouteAction');
  if (action.weighted_clusters === undefined) return;
  const wc = objectOf(action.weighted_clusters);
  checkFields(wc, `${where}.route.weighted_clusters`, report, WEIGHTED_FIELDS, 'WeightedCluster');
  listOf(wc.clusters).forEach((c, i) => {
    const at = `${where}.route.weighted_clusters.clusters[${i}]`;
    checkFields(c, at, report, CLUSTER_WEIGHT_FIELDS, 'ClusterWeight');
  });
}
