/**
 * The API version of the resources a `ConfigSource` asks for, the pure half of its compile
 * step (src/config/config-source.ts), which reads it with these functions too: the config
 * dump shows the resources of a source asking for v3 as v3, and views may not import src/.
 */
import type { ApiVersion, Json, RawCluster } from '../../events/index.js';
import { objectOf } from './values.js';

export type { ApiVersion };

/** `ApiVersion` by name; AUTO and unset mean V2, as in the reference's 1.15 release. */
export function apiVersion(value: Json | undefined): ApiVersion {
  return value === 'V3' ? 'V3' : 'V2';
}

/** The `resource_api_version` of a ConfigSource (V2 for none). */
export function resourceApiVersion(source: Json | undefined): ApiVersion {
  return apiVersion(objectOf(source).resource_api_version);
}

/** The resource API version of the bootstrap's CDS and LDS sources. */
export function dynamicApiVersions(bootstrap: Json | undefined): { cds: ApiVersion; lds: ApiVersion } {
  const dynamic = objectOf(objectOf(bootstrap).dynamic_resources);
  return { cds: resourceApiVersion(dynamic.cds_config), lds: resourceApiVersion(dynamic.lds_config) };
}

/** The resource API version of an EDS cluster's `eds_cluster_config.eds_config`. */
export function edsApiVersion(cluster: RawCluster): ApiVersion {
  return resourceApiVersion(objectOf(cluster.eds_cluster_config).eds_config);
}
