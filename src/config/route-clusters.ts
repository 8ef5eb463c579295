import type { JsonObject } from '../../events/config.js';
import { arrayOf, objectOf } from '../../reducers/settings/values.js';
import { CONFIG_TYPE, configTypeOf } from '../bootstrap/extensions.js';
import type { Report } from '../bootstrap/report.js';

/** The route tables written inline in a listener's HTTP connection managers, with their paths. */
export function inlineRouteConfigs(
  listener: JsonObject,
  path: string,
): Array<{ config: JsonObject; path: string }> {
  const out: Array<{ config: JsonObject; path: string }> = [];
  arrayOf(listener.filter_chains).forEach((chain, i) => {
    arrayOf(objectOf(chain).filters).forEach((f, j) => {
      const filter = objectOf(f);
      const hcm = objectOf(filter.typed_config);
      if (configTypeOf(filter) !== CONFIG_TYPE.httpConnectionManager || hcm.route_config === undefined)
        return;
      out.push({
        config: objectOf(hcm.route_config),
        path: `${path}.filter_chains[${i}].filters[${j}].typed_config.route_config`,
      });
    });
  });
  return out;
}

/**
 * `validate_clusters`, with the reference's default: true for a table written inline (in the
 * bootstrap or a discovered listener), false for one from route discovery unless it sets it.
 * When on, a route (or weighted cluster) naming a cluster not in `known` is an error at its
 * field path, so the table does not load, rather than a 503 for every request it routes.
 */
export function checkRouteClusters(
  table: JsonObject,
  path: string,
  report: Report,
  known: ReadonlySet<string>,
  inline: boolean,
): void {
  const validate = typeof table.validate_clusters === 'boolean' ? table.validate_clusters : inline;
  if (!validate) return;
  const unknown = (at: string, name: string, what: string) =>
    report.error(
      at,
      `${what} '${name}' is not a known cluster (validate_clusters is ${table.validate_clusters === undefined ? 'on by default for an inline route table' : 'true'}; define the cluster, or set validate_clusters: false to answer 503 at request time)`,
    );
  arrayOf(table.virtual_hosts).forEach((vh, v) => {
    arrayOf(objectOf(vh).routes).forEach((r, i) => {
      const action = objectOf(objectOf(r).route);
      const at = `${path}.virtual_hosts[${v}].routes[${i}].route`;
      if (typeof action.cluster === 'string' && !known.has(action.cluster))
        unknown(`${at}.cluster`, action.cluster, 'route: cluster');
      arrayOf(objectOf(action.weighted_clusters).clusters).forEach((w, k) => {
        const name = objectOf(w).name;
        if (typeof name === 'string' && !known.has(name))
          unknown(`${at}.weighted_clusters.clusters[${k}].name`, name, 'route: weighted cluster');
      });
      arrayOf(action.request_mirror_policies).forEach((m, k) => {
        const name = objectOf(m).cluster;
        if (typeof name === 'string' && name !== '' && !known.has(name))
          unknown(`${at}.request_mirror_policies[${k}].cluster`, name, 'route: mirror cluster');
      });
    });
  });
}
