/**
 * The identity of each network filter of this build (names, type URLs, schema), as the loader
 * reads them through src/bootstrap/catalog.ts. They are apart from the factories
 * (registry.ts) because a factory's compile step can read configs through the loader (the HCM
 * compiles its routes' `per_filter_config` Structs with it): the loader importing the
 * factories would close a circle. `test/dataplane/network-filters/registry.test.ts` holds both
 * lists to the same filters in the same order.
 */
import { CONFIG_TYPE, type ExtensionIdentity } from '../../bootstrap/extensions.js';
import { NETWORK_EXT_AUTHZ } from './ext-authz/extension.js';
import { LOCAL_RATELIMIT } from './local-ratelimit/extension.js';
import { SNI_CLUSTER } from './sni-cluster/extension.js';

const HCM_V3 = 'envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';

export const HTTP_CONNECTION_MANAGER: ExtensionIdentity = {
  name: 'envoy.filters.network.http_connection_manager',
  aliases: ['envoy.http_connection_manager'],
  configType: CONFIG_TYPE.httpConnectionManager,
  typeAliases: { [HCM_V3]: CONFIG_TYPE.httpConnectionManager },
  schema: { file: 'envoy/config/filter/network/http_connection_manager/v2.proto' },
};

export const TCP_PROXY: ExtensionIdentity = {
  name: 'envoy.filters.network.tcp_proxy',
  aliases: ['envoy.tcp_proxy'],
  configType: CONFIG_TYPE.tcpProxy,
  typeAliases: { 'envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy': CONFIG_TYPE.tcpProxy },
  schema: { file: 'envoy/config/filter/network/tcp_proxy/v2.proto' },
};

const RBAC_V2 = 'envoy.config.filter.network.rbac.v2.RBAC';

export const NETWORK_RBAC: ExtensionIdentity = {
  name: 'envoy.filters.network.rbac',
  configType: RBAC_V2,
  typeAliases: { 'envoy.extensions.filters.network.rbac.v3.RBAC': RBAC_V2 },
  schema: { file: 'envoy/config/filter/network/rbac/v2.proto' },
};

/** Every network filter, in the order of NETWORK_FILTER_FACTORIES. */
export const NETWORK_FILTER_EXTENSIONS: readonly ExtensionIdentity[] = [
  HTTP_CONNECTION_MANAGER,
  TCP_PROXY,
  NETWORK_RBAC,
  LOCAL_RATELIMIT,
  SNI_CLUSTER,
  NETWORK_EXT_AUTHZ,
];
