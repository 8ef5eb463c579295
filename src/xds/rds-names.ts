import type { JsonObject, RawListener } from '../../events/config.js';
import { objectOf } from '../../reducers/settings/values.js';
import { CONFIG_TYPE, configTypeOf } from '../bootstrap/extensions.js';

/** The route tables a listener's HTTP connection managers take from route discovery. */
export function rdsNamesOf(listener: RawListener): Array<{ name: string; configSource: JsonObject }> {
  const out: Array<{ name: string; configSource: JsonObject }> = [];
  const chains = Array.isArray(listener.filter_chains) ? listener.filter_chains : [];
  for (const chain of chains) {
    const filters = objectOf(chain).filters;
    for (const filter of Array.isArray(filters) ? filters : []) {
      const f = objectOf(filter);
      if (configTypeOf(f) !== CONFIG_TYPE.httpConnectionManager) continue;
      const rds = objectOf(objectOf(f.typed_config).rds);
      if (typeof rds.route_config_name === 'string' && rds.route_config_name)
        out.push({ name: rds.route_config_name, configSource: objectOf(rds.config_source) });
    }
  }
  return out;
}
