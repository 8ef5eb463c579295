/**
 * `envoy.filters.network.sni_cluster`: a connection whose ClientHello named a server goes, through
 * the chain's TCP proxy, to the cluster of that name (the reference's `envoy.tcp_proxy.cluster`
 * filter state; ../../tcp/cluster-override.ts). See docs/data-plane.md.
 */
import { checkFields } from '../../../bootstrap/honoured.js';
import { requestedServerName } from '../../listeners/server-name.js';
import { setTcpProxyCluster } from '../../tcp/cluster-override.js';
import type { ReadFilterFactory } from '../api.js';

const V2 = 'envoy.config.filter.network.sni_cluster.v2.SniCluster';

/** The config message has no fields; it is carried here rather than under proto/. */
const SNI_CLUSTER_PROTO = `
syntax = "proto3";
package envoy.config.filter.network.sni_cluster.v2;
message SniCluster {}
`;

export const sniClusterFactory: ReadFilterFactory<null> = {
  name: 'envoy.filters.network.sni_cluster',
  configType: V2,
  typeAliases: { 'envoy.extensions.filters.network.sni_cluster.v3.SniCluster': V2 },
  schema: { source: SNI_CLUSTER_PROTO },
  terminal: false,
  fieldTables: { SniCluster: {} },
  compile(config, path, report) {
    checkFields(config, path, report, {}, 'SniCluster');
    return null;
  },
  start: () => ({
    onNewConnection(socket, proceed) {
      const name = requestedServerName(socket);
      if (name !== '') setTcpProxyCluster(socket, name);
      proceed();
    },
  }),
};
