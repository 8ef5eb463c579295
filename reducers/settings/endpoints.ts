/**
 * The members a cluster's config names (its `load_assignment`, or the deprecated `hosts`): the
 * pure half of the ClusterLoadAssignment's compile step (src/config/load-assignment.ts), which
 * the reducers derive by identity as they may not import src/.
 */
import type { HostSpec, Json, JsonObject, Locality, RawCluster } from '../../events/index.js';
import { arrayOf, objectOf } from './values.js';

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

const read = new WeakMap<JsonObject, HostSpec[]>();

/**
 * Every endpoint a cluster's config names, in order: `load_assignment` when present
 * (it supersedes the deprecated `hosts`), else `hosts`. Addresses may be names that
 * DNS clusters resolve later; `ip` holds the name then. Read once per config, kept by the
 * identity of its `load_assignment` (else of the cluster): the static cluster's reducer, the
 * DNS edge and the ClusterLoadAssignment's compile step share one list (do not change it).
 */
export function configuredEndpoints(cluster: RawCluster): HostSpec[] {
  const assignment = cluster.load_assignment;
  const key = assignment !== undefined ? objectOf(assignment) : cluster;
  const hit = read.get(key);
  if (hit) return hit;
  const out = assignment !== undefined ? assignmentMembers(key) : deprecatedHosts(cluster);
  read.set(key, out);
  return out;
}

function assignmentMembers(assignment: JsonObject): HostSpec[] {
  const out: HostSpec[] = [];
  for (const group of arrayOf(assignment.endpoints)) {
    const g = objectOf(group);
    const where = objectOf(g.locality);
    const priority = num(g.priority, 0);
    const localityWeight = num(g.load_balancing_weight, 0);
    // One object for the group's members, rather than one each: a big cluster holds few localities.
    const locality: Locality = {
      region: str(where.region),
      zone: str(where.zone),
      sub_zone: str(where.sub_zone),
    };
    for (const lbEndpoint of arrayOf(g.lb_endpoints)) {
      const le = objectOf(lbEndpoint);
      const endpoint = objectOf(le.endpoint);
      out.push({
        ...socketHost(endpoint.address),
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

/**
 * The name the socket calls take for a pipe's path: Linux's abstract namespace is the
 * reference's `@name`, a leading NUL for Node.
 */
export function pipeSocketPath(path: string): string {
  return path.startsWith('@') ? `\0${path.slice(1)}` : path;
}

/** An `Address`'s socket address as a host's key, IP and port; a pipe's path as both. */
function socketHost(address: Json | undefined): Pick<HostSpec, 'address' | 'ip' | 'port' | 'pipe'> {
  const pipe = str(objectOf(objectOf(address).pipe).path);
  if (pipe) return { address: pipe, ip: pipe, port: 0, pipe: true };
  const socket = objectOf(objectOf(address).socket_address);
  const ip = str(socket.address);
  const port = num(socket.port_value, 0);
  return { address: hostKey(ip, port), ip, port };
}

function deprecatedHosts(cluster: RawCluster): HostSpec[] {
  const out: HostSpec[] = [];
  for (const address of arrayOf(cluster.hosts)) {
    out.push({
      ...socketHost(address),
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
