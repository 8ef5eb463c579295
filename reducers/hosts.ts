import { isIP } from 'node:net';
import type { HostSpec, RawCluster } from '../events/index.js';
import { configuredEndpoints, hostKey, isIpLiteral } from './settings/endpoints.js';
import { stringOr } from './settings/values.js';
import type { HostState } from './state.js';

/**
 * Members known from config alone: every endpoint of a STATIC cluster (or of any cluster
 * whose endpoints are all IP literals). Clusters of names wait for DNS.
 */
export function staticHosts(cluster: RawCluster): HostState[] {
  const type = stringOr(cluster.type, 'STATIC');
  if (type === 'EDS' || type === 'ORIGINAL_DST' || cluster.cluster_type !== undefined) return [];
  const endpoints = configuredEndpoints(cluster);
  if (type !== 'STATIC' && !endpoints.every((e) => isIpLiteral(e.ip))) return [];
  const checked = isActivelyChecked(cluster);
  return endpoints.map((h) => withHealth(h, undefined, checked, false));
}

/** True when the cluster has `health_checks`: its new members then start as failing them. */
export function isActivelyChecked(cluster: RawCluster): boolean {
  return Array.isArray(cluster.health_checks) && cluster.health_checks.length > 0;
}

/**
 * True when members the cluster gains once it exists wait for their first check outside the
 * weight and panic counts: `ignore_new_hosts_until_first_hc` with active health checks.
 */
export function waitsForFirstCheck(cluster: RawCluster): boolean {
  const common = cluster.common_lb_config;
  const ignore =
    common !== null &&
    typeof common === 'object' &&
    !Array.isArray(common) &&
    common.ignore_new_hosts_until_first_hc;
  return ignore === true && isActivelyChecked(cluster);
}

/**
 * A host as discovery describes it, keeping the checkers' verdicts of its previous self. As
 * in the reference, a new member of an actively checked cluster starts `/failed_active_hc`
 * until its first check passes; a member that stays keeps its verdicts. `pending`: a
 * new member waits for its first check outside the weight counts.
 */
export function withHealth(
  spec: HostSpec,
  previous: HostState | undefined,
  checked: boolean,
  pending: boolean,
): HostState {
  // Spelled out rather than spread: one stable object shape, which made a 10k-host update's
  // records several times cheaper to build than `{ ...spec }` did.
  const host: HostState = {
    address: spec.address,
    ip: spec.ip,
    port: spec.port,
    hostname: spec.hostname,
    weight: spec.weight,
    priority: spec.priority,
    locality: spec.locality,
    metadata: spec.metadata,
    edsHealth: spec.edsHealth,
    failedActiveHc: previous ? previous.failedActiveHc : checked,
    failedOutlierCheck: previous?.failedOutlierCheck ?? false,
  };
  if (spec.localityWeight !== undefined) host.localityWeight = spec.localityWeight;
  if (spec.pipe) host.pipe = true;
  // Only on the few members that wait, so every other record keeps its shape and its JSON.
  if (checked && (previous ? previous.pendingActiveHc === true : pending)) host.pendingActiveHc = true;
  // The times of past verdicts stay with the member when discovery rewrites its record.
  if (previous?.activeHcChangedAt !== undefined) host.activeHcChangedAt = previous.activeHcChangedAt;
  if (previous?.lastEjection !== undefined) host.lastEjection = previous.lastEjection;
  return host;
}

/** `ip:port` (IPv6 bracketed) as a member address, or null when it is not a literal address with a port. */
export function parseDestination(value: string): { address: string; ip: string; port: number } | null {
  const m = /^\[([^\]]+)\]:(\d{1,5})$/.exec(value) ?? /^([^:[\]]+):(\d{1,5})$/.exec(value);
  if (!m) return null;
  const ip = m[1] as string;
  const port = Number(m[2]);
  if (isIP(ip) === 0 || port < 1 || port > 65535) return null;
  return { address: hostKey(ip, port), ip, port };
}

/** A destination as a member: weight 1, no locality, healthy. */
export function destinationState(d: { address: string; ip: string; port: number }): HostState {
  return {
    ...d,
    hostname: '',
    weight: 1,
    priority: 0,
    locality: { region: '', zone: '', sub_zone: '' },
    metadata: {},
    edsHealth: 'UNKNOWN',
    failedActiveHc: false,
    failedOutlierCheck: false,
  };
}
