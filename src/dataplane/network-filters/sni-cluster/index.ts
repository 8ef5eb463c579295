/**
 * `envoy.filters.network.sni_cluster`: a connection whose ClientHello named a server goes, through
 * the chain's TCP proxy, to the cluster of that name (the reference's `envoy.tcp_proxy.cluster`
 * filter state; ../../tcp/cluster-override.ts). See docs/data-plane.md.
 */
import { checkFields } from '../../../bootstrap/honoured.js';
import { requestedServerName } from '../../listeners/server-name.js';
import { setTcpProxyCluster } from '../../tcp/cluster-override.js';
import type { ReadFilterFactory } from '../api.js';
import { SNI_CLUSTER } from './extension.js';

export const sniClusterFactory: ReadFilterFactory<null> = {
  ...SNI_CLUSTER,
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
