import type { JsonObject } from '../../events/config.js';
import { objectOf } from '../../reducers/settings/values.js';
import { CONFIG_TYPE, configTypeOf } from '../bootstrap/extensions.js';

/** The route tables a listener's HTTP connection managers take from route discovery. */
export function rdsNamesOf(
  listener: JsonObject,
): Array<{ name: string; configSource: JsonObject; path: string; statPrefix: string }> {
  const out: Array<{ name: string; configSource: JsonObject; path: string; statPrefix: string }> = [];
  const chains = Array.isArray(listener.filter_chains) ? listener.filter_chains : [];
  for (const [c, chain] of chains.entries()) {
    const filters = objectOf(chain).filters;
    for (const [f, filter] of (Array.isArray(filters) ? filters : []).entries()) {
      const config = objectOf(filter);
      if (configTypeOf(config) !== CONFIG_TYPE.httpConnectionManager) continue;
      const hcm = objectOf(config.typed_config);
      const rds = objectOf(hcm.rds);
      if (typeof rds.route_config_name === 'string' && rds.route_config_name)
        out.push({
          name: rds.route_config_name,
          configSource: objectOf(rds.config_source),
          path: `filter_chains[${c}].filters[${f}].typed_config.rds.config_source`,
          statPrefix: typeof hcm.stat_prefix === 'string' ? hcm.stat_prefix : '',
        });
    }
  }
  return out;
}
