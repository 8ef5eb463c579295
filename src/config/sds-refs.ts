/**
 * The secrets a cluster's or listener's TLS contexts ask secret discovery for: each
 * `SdsSecretConfig` with an `sds_config`, found where the TLS compile step reads them. The
 * xDS client subscribes to them and initialisation waits for them.
 */
import type { JsonObject } from '../../events/index.js';
import { listOf, objectOf } from '../../reducers/settings/values.js';
import { CONFIG_TYPE, configTypeOf } from '../bootstrap/extensions.js';

/** One secret to discover: its name, its config source, and the field path naming it. */
export interface SdsRef {
  name: string;
  configSource: JsonObject;
  path: string;
}

/** The TLS context of `holder`, as `compileTransportTls` picks it; null for plain text. */
function tlsContextOf(
  holder: JsonObject,
  tlsType: string,
  path: string,
): { raw: JsonObject; path: string } | null {
  if (holder.transport_socket !== undefined) {
    const socket = objectOf(holder.transport_socket);
    return configTypeOf(socket) === tlsType
      ? { raw: objectOf(socket.typed_config), path: `${path}.transport_socket.typed_config` }
      : null;
  }
  return holder.tls_context !== undefined
    ? { raw: objectOf(holder.tls_context), path: `${path}.tls_context` }
    : null;
}

function refsOfContext(found: { raw: JsonObject; path: string } | null): SdsRef[] {
  if (!found) return [];
  const at = `${found.path}.common_tls_context`;
  const common = objectOf(found.raw.common_tls_context);
  const refs: Array<{ ref: JsonObject; path: string }> = [
    ...listOf(common.tls_certificate_sds_secret_configs).map((ref, i) => ({
      ref,
      path: `${at}.tls_certificate_sds_secret_configs[${i}]`,
    })),
    {
      ref: objectOf(common.validation_context_sds_secret_config),
      path: `${at}.validation_context_sds_secret_config`,
    },
    {
      ref: objectOf(objectOf(common.combined_validation_context).validation_context_sds_secret_config),
      path: `${at}.combined_validation_context.validation_context_sds_secret_config`,
    },
  ];
  return refs.flatMap(({ ref, path }) =>
    ref.sds_config !== undefined && typeof ref.name === 'string' && ref.name !== ''
      ? [{ name: ref.name, configSource: objectOf(ref.sds_config), path }]
      : [],
  );
}

/**
 * Refs of a whole resource (no path prefix), kept by the config's identity: the xDS edge asks
 * for them at every reconcile, and reads what was derived the first time.
 */
const byConfig = {
  cluster: new WeakMap<JsonObject, SdsRef[]>(),
  listener: new WeakMap<JsonObject, SdsRef[]>(),
};

function once(kind: keyof typeof byConfig, config: JsonObject, path: string, read: () => SdsRef[]): SdsRef[] {
  if (path !== '') return read();
  const hit = byConfig[kind].get(config);
  if (hit) return hit;
  const refs = read();
  byConfig[kind].set(config, refs);
  return refs;
}

/** The SDS references of a cluster's TLS context. */
export function clusterSdsRefs(cluster: JsonObject, path = ''): SdsRef[] {
  return once('cluster', cluster, path, () =>
    refsOfContext(tlsContextOf(cluster, CONFIG_TYPE.upstreamTls, path)),
  );
}

/** The SDS references of a listener's filter chains' TLS contexts. */
export function listenerSdsRefs(listener: JsonObject, path = ''): SdsRef[] {
  return once('listener', listener, path, () =>
    listOf(listener.filter_chains).flatMap((chain, i) =>
      refsOfContext(tlsContextOf(chain, CONFIG_TYPE.downstreamTls, `${path}.filter_chains[${i}]`)),
    ),
  );
}
