import type { ExtensionIdentity } from '../../../bootstrap/extensions.js';

const V2ALPHA = 'envoy.config.filter.network.local_rate_limit.v2alpha.LocalRateLimit';

/** `envoy.filters.network.local_ratelimit`: v2alpha is the message this build reads, v3 renamed its package. */
export const LOCAL_RATELIMIT: ExtensionIdentity = {
  name: 'envoy.filters.network.local_ratelimit',
  configType: V2ALPHA,
  typeAliases: { 'envoy.extensions.filters.network.local_ratelimit.v3.LocalRateLimit': V2ALPHA },
  schema: { file: 'envoy/config/filter/network/local_rate_limit/v2alpha.proto' },
};
