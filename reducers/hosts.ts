import { isIP } from 'node:net';
import type { HostSpec, Json, JsonObject, Locality, RawCluster } from '../events/index.js';
import { arrayOf, objectOf } from './settings/values.js';
import type { HostState } from './state.js';

const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;

/** True when `address` is a literal IP (v4 or v6) rather than a name to resolve. */
export function isIpLiteral(address: string): boolean {
  return IPV4.test(address) || address.includes(':');
}

/**
 * `ip:port`, with brackets around IPv6 as the reference prints it. Joined rather than
 * templated: V8 builds a template of 13 characters or more as a rope (two strings and a
 * node over them) and `join` as one flat string, half the bytes for each member's key.
 */
export function hostKey(ip: string, port: number): string {
  return ip.includes(':') ? `[${ip}]:${port}` : [ip, port].join(':');
}

function str(value: Json | undefined): string {
  return typeof value === 'string' ? value : '';
}

function num(value: Json | undefined, fallback: number): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && value !== '') return Number(value);
  return fallback;
}

/**
 * The metadata of a member without any, and the locality of members of no locality: one frozen
 * object for all of them, where an object per member cost tens of bytes each in a big cluster.
 */
export const NO_METADATA: JsonObject = Object.freeze({});
const NO_LOCALITY: Locality = Object.freeze({ region: '', zone: '', sub_zone: '' });

function metadataOf(value: Json | undefined): JsonObject {
  const metadata = objectOf(value);
  for (const _ in metadata) return metadata;
  return NO_METADATA;
}

/**
 * Every endpoint a cluster's config names, in order: `load_assignment` when present
 * (it supersedes the deprecated `hosts`), else `hosts`. Addresses may be names that
 * DNS clusters resolve later; `ip` holds the name then.
 */
export function configuredEndpoints(cluster: RawCluster): HostSpec[] {
  const out: HostSpec[] = [];
  const assignment = objectOf(cluster.load_assignment);
  if (cluster.load_assignment !== undefined) {
    for (const [localityIndex, group] of arrayOf(assignment.endpoints).entries()) {
      const g = objectOf(group);
      const where = objectOf(g.locality);
      const priority = num(g.priority, 0);
      const localityWeight = num(g.load_balancing_weight, 0);
      void localityIndex;
      // One object for the group's members, rather than one each: a big cluster holds few localities.
      const locality: Locality = {
        region: str(where.region),
        zone: str(where.zone),
        sub_zone: str(where.sub_zone),
      };
      for (const lbEndpoint of arrayOf(g.lb_endpoints)) {
        const le = objectOf(lbEndpoint);
        const endpoint = objectOf(le.endpoint);
        const socket = objectOf(objectOf(endpoint.address).socket_address);
        const ip = str(socket.address);
        const port = num(socket.port_value, 0);
        out.push({
          address: hostKey(ip, port),
          ip,
          port,
          hostname: str(endpoint.hostname),
          weight: num(le.load_balancing_weight, 1),
          priority,
          locality,
          metadata: metadataOf(objectOf(le.metadata).filter_metadata),
          edsHealth: (str(le.health_status) || 'UNKNOWN') as HostSpec['edsHealth'],
          // Only where a group sets one, so the records of every other cluster keep their shape.
          ...(localityWeight > 0 ? { localityWeight } : {}),
        });
      }
    }
    return out;
  }
  for (const address of arrayOf(cluster.hosts)) {
    const socket = objectOf(objectOf(address).socket_address);
    const ip = str(socket.address);
    const port = num(socket.port_value, 0);
    out.push({
      address: hostKey(ip, port),
      ip,
      port,
      hostname: '',
      weight: 1,
      priority: 0,
      locality: NO_LOCALITY,
      metadata: NO_METADATA,
      edsHealth: 'UNKNOWN',
    });
  }
  return out;
}

/**
 * Members known from config alone: every endpoint of a STATIC cluster (or of any cluster
 * whose endpoints are all IP literals). Clusters of names wait for DNS.
 */
export function staticHosts(cluster: RawCluster): HostState[] {
  const type = str(cluster.type) || 'STATIC';
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
