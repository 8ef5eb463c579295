import type * as net from 'node:net';

/**
 * The reference's filter state `envoy.tcp_proxy.cluster`: a network filter before the TCP
 * proxy (sni_cluster) names the cluster one connection goes to, in place of the proxy's
 * `cluster` or `weighted_clusters`.
 */
const CLUSTER = Symbol('tcp proxy cluster');

type Overridden = net.Socket & { [CLUSTER]?: string };

export function setTcpProxyCluster(socket: net.Socket, cluster: string): void {
  Object.defineProperty(socket, CLUSTER, { value: cluster, configurable: true });
}

/** The cluster a filter named for this connection, or null. */
export function tcpProxyCluster(socket: net.Socket): string | null {
  return (socket as Overridden)[CLUSTER] ?? null;
}
