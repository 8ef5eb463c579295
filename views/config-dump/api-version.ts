import type { Json, JsonObject } from '../../events/index.js';
import { v3MessageName } from '../../reducers/settings/api-names.js';
import {
  dynamicApiVersions,
  edsApiVersion,
  resourceApiVersion,
} from '../../reducers/settings/config-source.js';
import type { ClusterEntry, State } from '../../reducers/state.js';

const TYPE_URL_PREFIX = 'type.googleapis.com/';

/** Fields v3 renamed (the loader reads them as v2, src/bootstrap/schema.ts), back to their v3 spelling. */
const V3_KEYS: Record<string, string> = {
  host_rewrite: 'host_rewrite_literal',
  auto_host_rewrite_header: 'host_rewrite_header',
};

const isV3 = (source: Json | undefined): boolean => resourceApiVersion(source) === 'V3';

/**
 * Which resources came in as v3, so `/config_dump` shows them as v3: the bootstrap's own when
 * it was written in v3 (the loader tells, `apiVersion`), a discovered one when its
 * subscription's config source asks for v3 resources (`resource_api_version: V3`): CDS, LDS,
 * EDS per cluster, RDS per table, SDS per secret.
 */
export interface ApiVersions {
  bootstrap: boolean;
  clusters: boolean;
  listeners: boolean;
  route(name: string): boolean;
  endpoints(cluster: ClusterEntry): boolean;
  secret(name: string): boolean;
}

export function apiVersions(state: State): ApiVersions {
  const dynamic = dynamicApiVersions(state.bootstrap?.config);
  return {
    bootstrap: state.bootstrap?.apiVersion === 'V3',
    clusters: dynamic.cds === 'V3',
    listeners: dynamic.lds === 'V3',
    route: (name) =>
      Object.values(state.listeners).some((l) => asksV3(l.config, 'route_config_name', 'config_source', name)),
    endpoints: (cluster) => edsApiVersion(cluster.config) === 'V3',
    secret: (name) =>
      [...Object.values(state.clusters), ...Object.values(state.listeners)].some((e) =>
        asksV3(e.config, 'name', 'sds_config', name),
      ),
  };
}

/**
 * Whether `value` (a listener or cluster, at any depth) asks for the resource `name` from a V3
 * source: an HCM's `rds` (`route_config_name`, `config_source`) or a TLS context's
 * `SdsSecretConfig` (`name`, `sds_config`).
 */
function asksV3(value: Json, nameKey: string, sourceKey: string, name: string): boolean {
  if (Array.isArray(value)) return value.some((v) => asksV3(v, nameKey, sourceKey, name));
  if (value === null || typeof value !== 'object') return false;
  if (value[nameKey] === name && isV3(value[sourceKey])) return true;
  return Object.values(value).some((v) => asksV3(v, nameKey, sourceKey, name));
}

/**
 * A canonical (v2) message as v3: every `@type` names the v3 message, and the fields v3
 * renamed (only a route's action has any) are spelled as v3 spells them.
 */
export function asV3(value: Json, parentKey = ''): Json {
  if (Array.isArray(value)) return value.map((v) => asV3(v, parentKey));
  if (value === null || typeof value !== 'object') return value;
  const out: JsonObject = {};
  const action = parentKey === 'route';
  for (const [key, inner] of Object.entries(value)) {
    if (key === '@type' && typeof inner === 'string')
      out[key] = TYPE_URL_PREFIX + v3MessageName(inner.slice(inner.lastIndexOf('/') + 1));
    else out[action && Object.hasOwn(V3_KEYS, key) ? V3_KEYS[key]! : key] = asV3(inner, key);
  }
  return out;
}
