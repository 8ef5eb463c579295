import type { Json, JsonObject } from '../../../events/config.js';
import type { SubsetFallback, SubsetSettings } from '../../../reducers/settings/cluster.js';
import type { Counter } from '../../stats/store.js';
import type { LbContext, LoadBalancer, UpstreamHost } from '../types.js';
import { keySetOf, lbMetadata, subsetKeyOf, valueKey } from './criteria.js';
import type { BalancerInput, LbMemory } from './input.js';
import { localityKey } from './locality.js';

/** A subset's members and the balancer (the cluster's own policy) over them. */
interface Subset {
  readonly hosts: UpstreamHost[];
  readonly lb: LoadBalancer;
}

/**
 * Every value combination of `keys` a host's balancing metadata gives: one, or none when a
 * key is missing; with `list_as_any` a list value stands for each of its elements.
 */
function combinations(meta: JsonObject, keys: readonly string[], listAsAny: boolean): Json[][] {
  let out: Json[][] = [[]];
  for (const key of keys) {
    const value = meta[key];
    if (value === undefined) return [];
    const options = listAsAny && Array.isArray(value) ? value : [value];
    out = out.flatMap((prefix) => options.map((v) => [...prefix, v]));
  }
  return out;
}

/** Whether a host's balancing metadata holds every key/value of `wanted` (lists as any element with `list_as_any`). */
function hostMatches(meta: JsonObject, wanted: JsonObject, listAsAny: boolean): boolean {
  for (const [key, value] of Object.entries(wanted)) {
    const have = meta[key];
    if (have === undefined) return false;
    const want = valueKey(value);
    if (valueKey(have) === want) continue;
    if (listAsAny && Array.isArray(have) && have.some((v) => valueKey(v) === want)) continue;
    return false;
  }
  return true;
}

/** Hosts per locality key. */
function localityCounts(hosts: readonly UpstreamHost[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const h of hosts) {
    const key = localityKey(h.state.locality);
    out.set(key, (out.get(key) ?? 0) + 1);
  }
  return out;
}

/** `scale_locality_weight`: per locality, the subset's hosts there over the cluster's. */
function scaleOf(hosts: readonly UpstreamHost[], all: ReadonlyMap<string, number>): Map<string, number> {
  const mine = localityCounts(hosts);
  for (const [key, n] of mine) mine.set(key, n / (all.get(key) ?? n));
  return mine;
}

/**
 * The reference's subset load balancer (`lb_subset_config`): for each selector, one subset
 * per value combination of its keys found in the hosts' `envoy.lb` / `proxy.lb` metadata,
 * each balanced by the cluster's policy over its own members (health and panic included).
 * A request's criteria (the route's `metadata_match`) pick the subset with exactly those
 * keys and values; without one, the selector's or the cluster's fallback policy applies,
 * and `panic_mode_any` picks any host when the fallback finds none.
 */
export class SubsetBalancer implements LoadBalancer {
  private readonly subsets = new Map<string, Subset>();
  private readonly selectorFallback = new Map<string, SubsetFallback>();
  private readonly any: LoadBalancer;
  private readonly defaultSubset: Subset | null;
  private readonly selected: Counter;
  private readonly fallback: Counter;
  private readonly fallbackPanic: Counter;

  constructor(
    private readonly input: BalancerInput,
    private readonly config: SubsetSettings,
    build: (input: BalancerInput) => LoadBalancer,
  ) {
    const scope = input.scope;
    this.selected = scope.counter('lb_subsets_selected');
    this.fallback = scope.counter('lb_subsets_fallback');
    this.fallbackPanic = scope.counter('lb_subsets_fallback_panic');
    const children = input.memory.subsets ?? new Map<string, LbMemory>();
    input.memory.subsets = children;
    const settings = input.settings;
    const plain = {
      ...settings,
      subset: null,
      localityWeighted: settings.localityWeighted && config.localityWeightAware,
    };
    const perLocality = config.scaleLocalityWeight ? localityCounts(input.hosts) : null;
    const child = (key: string, hosts: UpstreamHost[]): Subset => {
      let memory = children.get(key);
      if (!memory) {
        memory = { seed: input.memory.seed, rrIndexes: [] };
        children.set(key, memory);
      }
      const localityScale = perLocality ? scaleOf(hosts, perLocality) : undefined;
      return { hosts, lb: build({ ...input, hosts, settings: plain, memory, localityScale }) };
    };

    const members = new Map<string, UpstreamHost[]>();
    const metas = input.hosts.map((h) => lbMetadata(h.state.metadata));
    for (const selector of config.selectors) {
      if (selector.fallbackPolicy)
        this.selectorFallback.set(keySetOf(selector.keys), selector.fallbackPolicy);
      input.hosts.forEach((host, i) => {
        for (const values of combinations(metas[i] as JsonObject, selector.keys, config.listAsAny)) {
          const key = subsetKeyOf(selector.keys.map((k, j) => [k, values[j] as Json] as const));
          const list = members.get(key);
          if (!list) members.set(key, [host]);
          else if (list[list.length - 1] !== host) list.push(host);
        }
      });
    }
    let created = 0;
    for (const [key, hosts] of members) {
      if (!children.has(key)) created++;
      this.subsets.set(key, child(key, hosts));
    }
    let removed = 0;
    for (const key of children.keys())
      if (!members.has(key) && !key.startsWith('\u0001')) {
        children.delete(key);
        removed++;
      }
    const control = input.controlScope ?? scope;
    control.counter('lb_subsets_created').add(created);
    control.counter('lb_subsets_removed').add(removed);
    scope.gauge('lb_subsets_active', 'NeverImport').set(this.subsets.size);

    // The fallbacks keep their own memory under keys no subset can have.
    this.any = child('\u0001any', input.hosts as UpstreamHost[]).lb;
    const defaults = input.hosts.filter((_h, i) =>
      hostMatches(metas[i] as JsonObject, config.defaultSubset, config.listAsAny),
    );
    this.defaultSubset = defaults.length > 0 ? child('\u0001default', defaults) : null;
  }

  choose(context: LbContext): UpstreamHost | null {
    const criteria = context.criteria;
    if (criteria) {
      const subset = this.subsets.get(criteria.subsetKey);
      if (subset) {
        this.selected.inc();
        return subset.lb.choose(context);
      }
    }
    const policy =
      (criteria ? this.selectorFallback.get(criteria.keySet) : undefined) ?? this.config.fallbackPolicy;
    if (policy === 'NO_FALLBACK') return null;
    const target = policy === 'ANY_ENDPOINT' ? this.any : this.defaultSubset?.lb;
    const host = target?.choose(context) ?? null;
    if (host) {
      this.fallback.inc();
      return host;
    }
    if (!this.config.panicModeAny || this.input.hosts.length === 0) return null;
    this.fallbackPanic.inc();
    return this.input.hosts[this.input.random() % this.input.hosts.length] as UpstreamHost;
  }
}
