import type { ExtensionIdentity } from '../../../bootstrap/extensions.js';

const V2 = 'envoy.config.filter.network.sni_cluster.v2.SniCluster';

/** The config message has no fields; it is carried here rather than under proto/. */
const SNI_CLUSTER_PROTO = `
syntax = "proto3";
package envoy.config.filter.network.sni_cluster.v2;
message SniCluster {}
`;

/** `envoy.filters.network.sni_cluster`. */
export const SNI_CLUSTER: ExtensionIdentity = {
  name: 'envoy.filters.network.sni_cluster',
  configType: V2,
  typeAliases: { 'envoy.extensions.filters.network.sni_cluster.v3.SniCluster': V2 },
  schema: { source: SNI_CLUSTER_PROTO },
};
