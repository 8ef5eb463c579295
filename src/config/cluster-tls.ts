/**
 * A cluster's TLS context: its compile step (`compileClusterTls`, run by `compileCluster` for
 * its findings) and the context the secrets of the moment make (`clusterTls`), for the pools,
 * the health checks and `/certs` alike.
 */
import type { JsonObject, RawCluster } from '../../events/index.js';
import { CONFIG_TYPE } from '../bootstrap/extensions.js';
import { Report } from '../bootstrap/report.js';
import { NO_SECRETS, type Secrets } from './secrets.js';
import { compileUpstreamTls, type UpstreamTls } from './tls-context.js';
import { compileTransportTls } from './transport-tls.js';

/** A cluster's TLS context (its TLS `transport_socket` or `tls_context`); null for plain text. */
export function compileClusterTls(
  cluster: JsonObject,
  path: string,
  report: Report,
  secrets: Secrets = NO_SECRETS,
): UpstreamTls | null {
  return compileTransportTls(cluster, path, report, secrets, CONFIG_TYPE.upstreamTls, compileUpstreamTls);
}

/** A cluster's TLS context as the secrets of the moment make it, and why a part could not be loaded. */
export interface ClusterTls {
  tls: UpstreamTls | null;
  errors: string[];
}

/** By the secrets (a rotated secret makes a new set), then by the cluster config. */
const made = new WeakMap<Secrets, WeakMap<RawCluster, ClusterTls>>();

/**
 * The TLS context the pools, the health checks and `/certs` use: compiled once per config and
 * set of secrets, by the step `compileCluster` ran on this config (its findings were reported there).
 */
export function clusterTls(cluster: RawCluster, secrets: Secrets): ClusterTls {
  const bySecrets = made.get(secrets) ?? new WeakMap<RawCluster, ClusterTls>();
  made.set(secrets, bySecrets);
  const hit = bySecrets.get(cluster);
  if (hit) return hit;
  const report = new Report('');
  const tls = compileClusterTls(cluster, `cluster '${cluster.name}'`, report, secrets);
  const out = { tls, errors: report.errors };
  bySecrets.set(cluster, out);
  return out;
}
