import { HttpConnectionManager } from '../http/manager.js';
import type { HttpConnectionManagerDeps } from '../http/types.js';
import type { NetworkFilterHandler } from '../network-filter.js';
import { createTcpProxy } from '../tcp/proxy.js';
import type { NetworkFilterSpec } from '../../config/listener.js';

/** Builds the handler of a chain's compiled terminal filter. */
export function buildNetworkFilter(
  spec: NetworkFilterSpec,
  deps: HttpConnectionManagerDeps,
): NetworkFilterHandler {
  return spec.kind === 'tcp_proxy'
    ? createTcpProxy(spec.tcp, deps)
    : new HttpConnectionManager(spec.hcm, deps);
}
