/**
 * What a matched route does: forward to a cluster or to weighted clusters, answer directly,
 * or redirect; compiled from the route's `route`, `direct_response` or `redirect`.
 */
import type { Json, JsonObject } from '../../../events/config.js';
import { listOf, numberOr, objectOf } from '../../../reducers/settings/values.js';
import { inlineBytes } from '../../bootstrap/data-source.js';
import { fault, type Report } from '../../bootstrap/report.js';
import { compileCriteria, type MetadataCriteria } from '../../upstream/lb/criteria.js';
import { compileHeaderMutation, type HeaderMutation, headerText } from './header-mutation.js';

export interface WeightedTarget {
  name: string;
  weight: number;
  /** Its `metadata_match` merged over the route's, for subset balancing. */
  criteria: MetadataCriteria | null;
  /** This cluster's own header mutations, applied before the route's. */
  headers: HeaderMutation | null;
  /** This cluster's, the route's, its virtual host's and the table's mutations, in that order, none null. */
  mutations: HeaderMutation[];
}

export type RouteAction =
  | { kind: 'cluster'; cluster: string }
  | { kind: 'weighted'; clusters: WeightedTarget[]; totalWeight: number }
  | { kind: 'direct'; status: number; body: Buffer | null }
  | {
      kind: 'redirect';
      scheme: string | null;
      host: string | null;
      port: number;
      path: string | null;
      prefixRewrite: string | null;
      status: number;
      stripQuery: boolean;
    };

const REDIRECT_CODES: Record<string, number> = {
  MOVED_PERMANENTLY: 301,
  FOUND: 302,
  SEE_OTHER: 303,
  TEMPORARY_REDIRECT: 307,
  PERMANENT_REDIRECT: 308,
};

function compileDataSource(raw: Json | undefined, where: string): Buffer | null {
  const ds = objectOf(raw);
  const inline = inlineBytes(ds);
  if (inline !== undefined) return inline;
  if (ds.filename !== undefined)
    throw fault(
      `${where}.filename`,
      'direct_response bodies from files are not supported; inline the body',
      'unsupported',
    );
  return null;
}

/** A `metadata_match` as written, for `compileCriteria`; null when unset. */
export const compileMetadataMatch = (o: JsonObject): JsonObject | null =>
  o.metadata_match === undefined ? null : objectOf(o.metadata_match);

/** The route's one action: `route` (a cluster or weighted clusters), `direct_response` or `redirect`. */
export function compileRouteAction(route: JsonObject, where: string, report: Report): RouteAction {
  if (route.route !== undefined) {
    const action = objectOf(route.route);
    if (typeof action.cluster === 'string' && action.cluster)
      return { kind: 'cluster', cluster: action.cluster };
    if (action.weighted_clusters !== undefined) {
      const wc = objectOf(action.weighted_clusters);
      const clusters = listOf(wc.clusters).map((c, i) => {
        if (typeof c.name !== 'string' || !c.name)
          throw fault(
            `${where}.route.weighted_clusters.clusters[${i}].name`,
            'required field missing',
            'missing',
          );
        return {
          name: c.name,
          weight: numberOr(c.weight, 0),
          criteria: compileCriteria(compileMetadataMatch(action), compileMetadataMatch(c)),
          headers: compileHeaderMutation(c, `${where}.route.weighted_clusters.clusters[${i}]`, report),
          mutations: [],
        };
      });
      if (clusters.length === 0)
        throw fault(`${where}.route.weighted_clusters.clusters`, 'needs at least one cluster', 'missing');
      const sum = clusters.reduce((s, c) => s + c.weight, 0);
      // The v2 default: weights are percentages unless total_weight says otherwise.
      const totalWeight = numberOr(wc.total_weight, 100);
      if (sum !== totalWeight)
        throw fault(
          `${where}.route.weighted_clusters.total_weight`,
          `is ${totalWeight} but the cluster weights add up to ${sum}; make them equal`,
        );
      return { kind: 'weighted', clusters, totalWeight };
    }
    if (typeof action.cluster_header === 'string')
      throw fault(
        `${where}.route.cluster_header`,
        'is not implemented; name the cluster or use weighted_clusters',
        'unsupported',
      );
    throw fault(`${where}.route`, 'needs cluster or weighted_clusters', 'missing');
  }
  if (route.direct_response !== undefined) {
    const dr = objectOf(route.direct_response);
    const status = numberOr(dr.status, 0);
    if (status < 100 || status > 599)
      throw fault(`${where}.direct_response.status`, `${status} is not an HTTP status (100-599)`);
    return { kind: 'direct', status, body: compileDataSource(dr.body, `${where}.direct_response.body`) };
  }
  if (route.redirect !== undefined) {
    const r = objectOf(route.redirect);
    return {
      kind: 'redirect',
      scheme:
        r.https_redirect === true
          ? 'https'
          : headerText(r.scheme_redirect, `${where}.redirect.scheme_redirect`),
      host: headerText(r.host_redirect, `${where}.redirect.host_redirect`),
      port: numberOr(r.port_redirect, 0),
      path: headerText(r.path_redirect, `${where}.redirect.path_redirect`),
      prefixRewrite: headerText(r.prefix_rewrite, `${where}.redirect.prefix_rewrite`),
      status: REDIRECT_CODES[String(r.response_code ?? 'MOVED_PERMANENTLY')] ?? 301,
      stripQuery: r.strip_query === true,
    };
  }
  throw fault(where, 'a route needs one of route, redirect, direct_response', 'missing');
}
