import type { ExtensionIdentity } from '../../../bootstrap/extensions.js';

const V2 = 'envoy.config.filter.network.ext_authz.v2.ExtAuthz';

/** `envoy.filters.network.ext_authz`; `envoy.ext_authz` is also the HTTP filter's short name, each in its own category. */
export const NETWORK_EXT_AUTHZ: ExtensionIdentity = {
  name: 'envoy.filters.network.ext_authz',
  aliases: ['envoy.ext_authz'],
  configType: V2,
  typeAliases: { 'envoy.extensions.filters.network.ext_authz.v3.ExtAuthz': V2 },
  schema: { file: 'envoy/config/filter/network/ext_authz/v2.proto' },
};
