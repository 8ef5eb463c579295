import type { Json, JsonObject } from '../../../events/config.js';
import { objectOf } from '../../../reducers/settings/values.js';

/** The metadata namespaces subset balancing reads, in both spellings; `proxy.lb` wins a clash. */
const LB_NAMESPACES = ['envoy.lb', 'proxy.lb'] as const;

/** The balancing metadata of a `filter_metadata` map: its `envoy.lb` and `proxy.lb` entries merged. */
export function lbMetadata(filterMetadata: JsonObject | undefined): JsonObject {
  const out: JsonObject = {};
  for (const ns of LB_NAMESPACES) {
    // A raw read by design: metadata is free-form data (a Struct) the subsets match on, not a
    // config field with a compile step; a namespace that is not a map adds nothing.
    if (filterMetadata?.[ns] !== undefined) Object.assign(out, objectOf(filterMetadata[ns]));
  }
  return out;
}

/** A metadata value as a stable string: equal values (objects in any key order) give equal text. */
export function valueKey(value: Json): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(valueKey).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${valueKey(value[k] as Json)}`).join(',')}}`;
}

/**
 * A route's `metadata_match` for the balancer, compiled once: the key/value pairs sorted by
 * key, the subset they name (`subsetKey`) and their key set (`keySet`), both as lookup strings.
 */
export interface MetadataCriteria {
  readonly entries: ReadonlyArray<readonly [string, Json]>;
  readonly subsetKey: string;
  readonly keySet: string;
}

/** The lookup string of a subset: its sorted keys with their values. */
export function subsetKeyOf(entries: ReadonlyArray<readonly [string, Json]>): string {
  return entries.map(([k, v]) => `${k}=${valueKey(v)}`).join('\u0000');
}

/** The lookup string of a key set (sorted). */
export function keySetOf(keys: readonly string[]): string {
  return keys.join('\u0000');
}

function criteriaOf(values: JsonObject): MetadataCriteria | null {
  const entries = Object.keys(values)
    .sort()
    .map((k) => [k, values[k] as Json] as const);
  if (entries.length === 0) return null;
  return { entries, subsetKey: subsetKeyOf(entries), keySet: keySetOf(entries.map(([k]) => k)) };
}

/**
 * The criteria of a route and, for a weighted cluster, of its entry: the entry's values
 * override the route's key by key, as the reference merges them. Null when neither names any.
 */
export function compileCriteria(
  route: JsonObject | null,
  entry: JsonObject | null = null,
): MetadataCriteria | null {
  const values: JsonObject = {
    ...lbMetadata(route ? objectOf(route.filter_metadata) : undefined),
    ...lbMetadata(entry ? objectOf(entry.filter_metadata) : undefined),
  };
  return criteriaOf(values);
}
