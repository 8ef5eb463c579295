import type { JsonObject } from '../../events/config.js';
import { objectOf } from '../../reducers/settings/values.js';
import { CONFIG_TYPE, configTypeOf } from '../bootstrap/extensions.js';

/** One route table a listener's HTTP connection manager takes from route discovery. */
export interface RdsName {
  name: string;
  configSource: JsonObject;
  /** The field path of its config source within the listener. */
  path: string;
  statPrefix: string;
}

const read = new WeakMap<JsonObject, RdsName[]>();

/**
 * The route tables a listener's HTTP connection managers take from route discovery, read once
 * per config (kept by its identity): the xDS edge asks at every reconcile and stats refresh.
 */
export function rdsNamesOf(listener: JsonObject): RdsName[] {
  const hit = read.get(listener);
  if (hit) return hit;
  const out: RdsName[] = [];
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
  read.set(listener, out);
  return out;
}
