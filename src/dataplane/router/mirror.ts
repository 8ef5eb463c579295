/**
 * A route's `request_mirror_policies` (and v2's single `request_mirror_policy`): which clusters
 * get a copy of the request, for what share of requests. The copies themselves are sent by the
 * router filter (src/dataplane/http/filters/router/shadow.ts). See docs/data-plane.md.
 */
import type { JsonObject } from '../../../events/config.js';
import { listOf, objectOf } from '../../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable, notYet } from '../../bootstrap/honoured.js';
import type { Report } from '../../bootstrap/report.js';
import { compileRuntimeFraction, type RuntimeFraction } from '../http/runtime-fraction.js';

/** One mirror policy of a route. */
export interface MirrorPolicy {
  /** The cluster the copy goes to; null when `clusterHeader` names it per request. */
  cluster: string | null;
  /** The request header whose first value names the cluster; null when `cluster` does. */
  clusterHeader: string | null;
  /** The share of requests mirrored: all when the policy sets none. */
  fraction: RuntimeFraction;
  /** `-shadow` is appended to the copy's host, unless `disable_shadow_host_suffix_append`. */
  suffix: boolean;
}

export const MIRROR_FIELDS: FieldTable = {
  ...acting('cluster', 'cluster_header', 'runtime_fraction', 'disable_shadow_host_suffix_append'),
  // This build makes no span for a copy: whether it would be sampled changes nothing.
  trace_sampled: 'advise',
  runtime_key: notYet('the mirror policy runtime_key (v2; write runtime_fraction)'),
};

const ALL: RuntimeFraction = { key: '', numerator: 100, denominator: 100 };

function compileMirror(raw: JsonObject, where: string, report: Report): MirrorPolicy | null {
  checkFields(raw, where, report, MIRROR_FIELDS, 'RouteAction.RequestMirrorPolicy');
  const cluster = typeof raw.cluster === 'string' && raw.cluster !== '' ? raw.cluster : null;
  const header =
    typeof raw.cluster_header === 'string' && raw.cluster_header !== ''
      ? raw.cluster_header.toLowerCase()
      : null;
  if ((cluster === null) === (header === null)) {
    report.error(where, 'exactly one of cluster or cluster_header is required');
    return null;
  }
  return {
    cluster,
    clusterHeader: header,
    fraction:
      raw.runtime_fraction === undefined
        ? ALL
        : compileRuntimeFraction(objectOf(raw.runtime_fraction), `${where}.runtime_fraction`, report),
    suffix: raw.disable_shadow_host_suffix_append !== true,
  };
}

/** The mirror policies of a route action; null for none. */
export function compileMirrorPolicies(
  action: JsonObject,
  where: string,
  report: Report,
): MirrorPolicy[] | null {
  const raws = [
    ...(action.request_mirror_policy === undefined
      ? []
      : [{ raw: objectOf(action.request_mirror_policy), at: `${where}.request_mirror_policy` }]),
    ...listOf(action.request_mirror_policies).map((raw, i) => ({
      raw,
      at: `${where}.request_mirror_policies[${i}]`,
    })),
  ];
  const policies = raws.flatMap(({ raw, at }) => compileMirror(raw, at, report) ?? []);
  return policies.length === 0 ? null : policies;
}

/** The host a copy carries: `-shadow` appended to the name, before any port (`a:80` -> `a-shadow:80`). */
export function shadowAuthority(authority: string): string {
  const colon = authority.lastIndexOf(':');
  // An IPv6 literal's colons are inside its brackets.
  if (colon < 0 || authority.indexOf(']', colon) >= 0) return `${authority}-shadow`;
  return `${authority.slice(0, colon)}-shadow${authority.slice(colon)}`;
}
