/**
 * The ClusterLoadAssignment's compile step: a cluster's `load_assignment` and an EDS resource
 * alike (src/edges/xds/resources.ts). Its field tables are listed in docs/bootstrap.md.
 */
import type { HostSpec, Json, JsonObject } from '../../events/index.js';
import { configuredEndpoints } from '../../reducers/settings/endpoints.js';
import { arrayOf } from '../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable, notYet } from '../bootstrap/honoured.js';
import { fieldPath, Report } from '../bootstrap/report.js';
import type { Compiled, CompileOptions } from './compiled.js';
import { checkIpLiteral } from './ip-literal.js';

function obj(value: Json | undefined): JsonObject | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? value : undefined;
}

function int(value: Json | undefined, fallback: number): number {
  return value === undefined ? fallback : Number(value);
}

const LOAD_ASSIGNMENT_FIELDS: FieldTable = {
  // The reference ignores cluster_name in a static load_assignment; EDS names the resource by it.
  ...acting('cluster_name', 'endpoints', 'policy'),
  named_endpoints: notYet('named_endpoints (endpoints referred to by name)'),
};
const LOAD_ASSIGNMENT_POLICY_FIELDS: FieldTable = {
  // Priority spill-over and locality weights use the reference's default 1.4, built in
  // (OVERPROVISIONING_FACTOR in src/upstream/lb/priority.ts); another factor is not threaded through.
  overprovisioning_factor: {
    refuse: 'overprovisioning_factor is not implemented: this build always uses the default 1.4',
  },
  drop_overloads: notYet('drop_overloads (load shedding by category)'),
  endpoint_stale_after: notYet('endpoint_stale_after'),
  disable_overprovisioning: notYet('disable_overprovisioning'),
};
const LOCALITY_LB_ENDPOINTS_FIELDS: FieldTable = {
  // load_balancing_weight: the weight of locality_weighted_lb_config (src/upstream/lb/locality.ts).
  ...acting('locality', 'lb_endpoints', 'load_balancing_weight', 'priority'),
  proximity: notYet('proximity'),
};
const LOCALITY_FIELDS: FieldTable = acting('region', 'zone', 'sub_zone');
const LB_ENDPOINT_FIELDS: FieldTable = {
  // health_status: the EDS health the balancers read; metadata: what subsets select on.
  ...acting('endpoint', 'health_status', 'metadata', 'load_balancing_weight'),
  endpoint_name: notYet('endpoint_name (endpoints referred to by name)'),
};
const ENDPOINT_FIELDS: FieldTable = {
  address: 'act',
  // The reference uses it for the health-check Host and auto_host_rewrite; neither reads it here.
  hostname: 'advise',
  // The active health checker probes the endpoint's own address and port: a health_check_config
  // naming that same port acts as written; another port is refused where it is read.
  health_check_config: 'act',
};
const HEALTH_CHECK_CONFIG_FIELDS: FieldTable = {
  port_value: 'act',
  hostname: notYet("health_check_config.hostname (the Host of an endpoint's health checks)"),
};

/** The tables of a `ClusterLoadAssignment`, static or discovered (docs/bootstrap.md lists them). */
export const LOAD_ASSIGNMENT_TABLES = {
  ClusterLoadAssignment: LOAD_ASSIGNMENT_FIELDS,
  'ClusterLoadAssignment.Policy': LOAD_ASSIGNMENT_POLICY_FIELDS,
  LocalityLbEndpoints: LOCALITY_LB_ENDPOINTS_FIELDS,
  Locality: LOCALITY_FIELDS,
  LbEndpoint: LB_ENDPOINT_FIELDS,
  Endpoint: ENDPOINT_FIELDS,
  'Endpoint.HealthCheckConfig': HEALTH_CHECK_CONFIG_FIELDS,
};

/**
 * Compiles one ClusterLoadAssignment; `path` names it in findings (empty for an EDS resource).
 * The value, its endpoints in order, is kept by the config's identity: the EDS edge applies
 * the members discovery compiled (`compiledClusterLoadAssignment`). The reducers derive a
 * static cluster's members with the same pure reader (`configuredEndpoints`,
 * reducers/settings/endpoints.ts), which keeps them by the assignment's identity.
 */
export function compileClusterLoadAssignment(
  raw: JsonObject,
  path: string,
  options: Pick<CompileOptions, 'report'> & { ipOnly?: boolean } = {},
): Compiled<HostSpec[]> {
  const report = options.report ?? new Report(path);
  checkRules(raw, path, report, options.ipOnly === true);
  return { value: configuredEndpoints({ name: '', load_assignment: raw }), findings: report };
}

/** The endpoints of an accepted assignment: the ones its compile step made, or read once now from a copy. */
export function compiledClusterLoadAssignment(raw: JsonObject): HostSpec[] {
  return configuredEndpoints({ name: '', load_assignment: raw });
}

/** The rules of a `ClusterLoadAssignment` beyond its shape; `ipOnly`: a STATIC cluster's or EDS's. */
function checkRules(assignment: JsonObject, p: string, report: Report, ipOnly: boolean): void {
  checkFields(assignment, p, report, LOAD_ASSIGNMENT_FIELDS, 'ClusterLoadAssignment');
  const policy = obj(assignment.policy);
  if (policy)
    checkFields(
      policy,
      fieldPath(p, 'policy'),
      report,
      LOAD_ASSIGNMENT_POLICY_FIELDS,
      'ClusterLoadAssignment.Policy',
    );
  arrayOf(assignment.endpoints).forEach((group, g) => {
    const locality = obj(group) ?? {};
    const gp = `${fieldPath(p, 'endpoints')}[${g}]`;
    checkFields(locality, gp, report, LOCALITY_LB_ENDPOINTS_FIELDS, 'LocalityLbEndpoints');
    const where = obj(locality.locality);
    if (where) checkFields(where, `${gp}.locality`, report, LOCALITY_FIELDS, 'Locality');
    if (int(locality.load_balancing_weight, 1) < 1) {
      report.error(`${gp}.load_balancing_weight`, 'must be >= 1');
    }
    arrayOf(locality.lb_endpoints).forEach((endpoint, e) => {
      const le = obj(endpoint) ?? {};
      const ep = `${gp}.lb_endpoints[${e}]`;
      checkFields(le, ep, report, LB_ENDPOINT_FIELDS, 'LbEndpoint');
      const host = obj(le.endpoint);
      if (host) checkFields(host, `${ep}.endpoint`, report, ENDPOINT_FIELDS, 'Endpoint');
      if (int(le.load_balancing_weight, 1) < 1) {
        report.error(`${ep}.load_balancing_weight`, 'must be >= 1');
      }
      const address = obj(host?.address);
      const socket = obj(address?.socket_address);
      if (!address?.pipe && !socket?.address)
        report.error(
          `${ep}.endpoint.address.socket_address.address`,
          'required field missing: every endpoint needs an address',
          'missing',
        );
      if (ipOnly)
        checkIpLiteral(socket?.address, `${ep}.endpoint.address.socket_address.address`, report, 'endpoint');
      // A unix socket is dialled by its path (the pools, health checks and xDS); DNS has nothing to resolve in it.
      else if (address?.pipe)
        report.error(
          `${ep}.endpoint.address.pipe`,
          'a pipe endpoint needs a STATIC or EDS cluster (a DNS cluster resolves names)',
        );
      // The reference's SocketAddress rule (port_value <= 65535): a larger one names no port.
      const port = int(socket?.port_value, 0);
      if (port > 65535)
        report.error(`${ep}.endpoint.address.socket_address.port_value`, `${port} is not a port (0..65535)`);
      const check = obj(host?.health_check_config);
      if (check) {
        const cp = `${ep}.endpoint.health_check_config`;
        checkFields(check, cp, report, HEALTH_CHECK_CONFIG_FIELDS, 'Endpoint.HealthCheckConfig');
        const checkPort = int(check.port_value, 0);
        if (checkPort !== 0 && checkPort !== port)
          report.unsupported(
            `${cp}.port_value`,
            `health checks on port ${checkPort}, not the endpoint's own ${port}, are not implemented`,
          );
      }
    });
  });
}
