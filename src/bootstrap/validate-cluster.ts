import type { Json, JsonObject } from '../../events/index.js';
import type { Report } from './report.js';

/** The reference's ring size limit (8M entries) for both minimum and maximum. */
export const MAX_RING_SIZE = 8_388_608;
const DEFAULT_MIN_RING = 1024;

const MEMBERS_REQUIRED = new Set(['STATIC', 'STRICT_DNS', 'LOGICAL_DNS']);

function obj(value: Json | undefined): JsonObject | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? value : undefined;
}

function list(value: Json | undefined): Json[] {
  return Array.isArray(value) ? value : [];
}

function int(value: Json | undefined, fallback: number): number {
  return value === undefined ? fallback : Number(value);
}

/**
 * Rules of the Cluster message beyond its shape (the walk already checked fields, enums,
 * oneofs, percents and negative durations). `p` is the cluster's path, e.g.
 * `static_resources.clusters[2]`.
 */
export function validateCluster(cluster: JsonObject, p: string, report: Report): void {
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
  if ((lbPolicy === 'ORIGINAL_DST_LB') !== (type === 'ORIGINAL_DST') && type !== 'custom') {
    report.error(
      `${p}.lb_policy`,
      `lb_policy ORIGINAL_DST_LB and type ORIGINAL_DST go together (found lb_policy ${lbPolicy}, type ${type})`,
    );
  }
  if (cluster.connect_timeout === '0s') report.error(`${p}.connect_timeout`, 'must be greater than 0s');
  const custom = obj(cluster.cluster_type);
  if (custom && !custom.name) report.error(`${p}.cluster_type.name`, 'required field missing');
  checkOutlierDetection(obj(cluster.outlier_detection), `${p}.outlier_detection`, report);
  for (const [i, hc] of list(cluster.health_checks).entries()) {
    checkHealthCheck(obj(hc) ?? {}, `${p}.health_checks[${i}]`, report);
  }
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
  const hosts = list(cluster.hosts);
  if (hosts.length > 0 && assignment) {
    report.warn(`${p}.hosts`, 'ignored: load_assignment is also set and overrides the deprecated hosts');
  }
  const groups = list(assignment?.endpoints);
  let members = assignment ? 0 : hosts.length;
  groups.forEach((group, g) => {
    const locality = obj(group) ?? {};
    const gp = `${p}.load_assignment.endpoints[${g}]`;
    if (int(locality.load_balancing_weight, 1) < 1) {
      report.error(`${gp}.load_balancing_weight`, 'must be >= 1');
    }
    list(locality.lb_endpoints).forEach((endpoint, e) => {
      members++;
      const le = obj(endpoint) ?? {};
      if (int(le.load_balancing_weight, 1) < 1) {
        report.error(`${gp}.lb_endpoints[${e}].load_balancing_weight`, 'must be >= 1');
      }
    });
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

const OUTLIER_PERCENTS = [
  'max_ejection_percent',
  'enforcing_consecutive_5xx',
  'enforcing_success_rate',
  'enforcing_consecutive_gateway_failure',
  'enforcing_consecutive_local_origin_failure',
  'enforcing_local_origin_success_rate',
  'failure_percentage_threshold',
  'enforcing_failure_percentage',
  'enforcing_failure_percentage_local_origin',
];

function checkOutlierDetection(od: JsonObject | undefined, p: string, report: Report): void {
  if (!od) return;
  for (const key of OUTLIER_PERCENTS) {
    if (od[key] !== undefined && Number(od[key]) > 100)
      report.error(`${p}.${key}`, `${od[key]} is not in 0..100`);
  }
}

function checkHealthCheck(hc: JsonObject, p: string, report: Report): void {
  for (const key of ['timeout', 'interval', 'unhealthy_threshold', 'healthy_threshold']) {
    if (hc[key] === undefined) report.error(`${p}.${key}`, 'required field missing');
  }
  for (const key of ['timeout', 'interval']) {
    if (hc[key] === '0s') report.error(`${p}.${key}`, 'must be greater than 0s');
  }
  const checkers = ['http_health_check', 'tcp_health_check', 'grpc_health_check', 'custom_health_check'];
  if (!checkers.some((k) => hc[k] !== undefined)) {
    report.error(p, `needs one health checker: ${checkers.join(', ')}`);
  }
  const http = obj(hc.http_health_check);
  if (http && !http.path) report.error(`${p}.http_health_check.path`, 'required field missing');
}
