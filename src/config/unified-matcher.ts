/**
 * The unified matcher (`xds.type.matcher.v3.Matcher`): a list of predicates or a map over one
 * input, each match leading to an action or a nested matcher, with `on_no_match` at every
 * level. What it reads (inputs, custom matchers) and what it yields (actions) belong to the
 * extension using it: the RBAC filters give theirs (src/dataplane/http/filters/rbac/matcher.ts).
 */
import type { Json, JsonObject } from '../../events/config.js';
import { listOf, objectOf } from '../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable } from '../bootstrap/honoured.js';
import { attempt, type Report } from '../bootstrap/report.js';
import { compileStringMatcher } from './matchers.js';

/** What an input reads of the data matched: a string, or null when the data has none (a header not sent). */
export type MatchInput<D> = (data: D) => string | null;

/** Where a custom matcher's counters come from, once its filter starts (`<stat_prefix>.ip_parsing_failed`). */
export type CounterSource = (name: string) => { inc(): void };

/** A value test that may count, bound to its counters when its filter starts. */
export type CustomMatch = (counters: CounterSource) => (value: string | null) => boolean;

/** What an extension lets its matchers read and yield; each hook reports what it refuses. */
export interface MatcherDomain<D, A> {
  /** The extension, for messages (`RBAC`). */
  what: string;
  input(type: string, config: JsonObject, path: string, report: Report): MatchInput<D> | undefined;
  customMatch(type: string, config: JsonObject, path: string, report: Report): CustomMatch | undefined;
  action(type: string, config: JsonObject, path: string, report: Report): A | undefined;
}

/** A compiled matcher: bound to its counters when its filter starts, then the action for some data, or null. */
export type MatcherPlan<D, A> = (counters: CounterSource) => (data: D) => A | null;

type Plan<D, T> = (counters: CounterSource) => (data: D) => T;

export const MATCHER_FIELD_TABLES: Record<string, FieldTable> = {
  Matcher: acting('matcher_list', 'matcher_tree', 'on_no_match'),
  OnMatch: acting('matcher', 'action', 'keep_matching'),
  MatcherList: acting('matchers'),
  FieldMatcher: acting('predicate', 'on_match'),
  Predicate: acting('single_predicate', 'or_matcher', 'and_matcher', 'not_matcher'),
  SinglePredicate: acting('input', 'value_match', 'custom_match'),
  PredicateList: acting('predicate'),
  MatcherTree: {
    ...acting('input', 'exact_match_map', 'prefix_match_map'),
    custom_match: {
      refuse:
        'Matcher.MatcherTree.custom_match is not implemented (use matcher_list with custom_match predicates)',
    },
  },
  MatchMap: acting('map'),
  TypedExtensionConfig: acting('name', 'typed_config'),
  StringMatcher: {
    ...acting('exact', 'prefix', 'suffix', 'safe_regex', 'contains', 'ignore_case'),
    custom: { refuse: 'StringMatcher.custom is not implemented' },
  },
};

/** The message name a typed config's `@type` names (`type.googleapis.com/x.y.Z` -> `x.y.Z`). */
function typeName(config: JsonObject): string {
  const url = typeof config['@type'] === 'string' ? config['@type'] : '';
  const name = url.slice(url.lastIndexOf('/') + 1);
  return name.startsWith('proxy.') ? 'envoy.' + name.slice('proxy.'.length) : name;
}

/** A `TypedExtensionConfig`'s message name and config; undefined (reported) without one. */
function typed(raw: Json | undefined, path: string, report: Report): [string, JsonObject] | undefined {
  const ext = objectOf(raw as JsonObject);
  checkFields(ext, path, report, MATCHER_FIELD_TABLES.TypedExtensionConfig!, 'TypedExtensionConfig');
  const config = objectOf(ext.typed_config);
  const type = typeName(config);
  if (type === '') {
    report.error(`${path}.typed_config`, "a typed_config with '@type' is required", 'missing');
    return undefined;
  }
  return [type, config];
}

/** Exactly one of a oneof's fields; reports none or several. */
function oneOf(raw: JsonObject, fields: readonly string[], path: string, report: Report): string | undefined {
  const set = fields.filter((f) => raw[f] !== undefined);
  if (set.length !== 1) report.error(path, `exactly one of ${fields.join(', ')} is required`, 'missing');
  return set[0];
}

const never: Plan<unknown, null> = () => () => null;

function compileInput<D>(
  raw: Json | undefined,
  path: string,
  report: Report,
  domain: MatcherDomain<D, unknown>,
): MatchInput<D> {
  const ext = typed(raw, path, report);
  return (ext && domain.input(ext[0], ext[1], `${path}.typed_config`, report)) ?? (() => null);
}

function compilePredicate<D>(
  raw: JsonObject,
  path: string,
  report: Report,
  domain: MatcherDomain<D, unknown>,
): Plan<D, boolean> {
  checkFields(raw, path, report, MATCHER_FIELD_TABLES.Predicate!, 'Predicate');
  const kind = oneOf(raw, ['single_predicate', 'or_matcher', 'and_matcher', 'not_matcher'], path, report);
  const at = `${path}.${kind}`;
  switch (kind) {
    case 'single_predicate': {
      const single = objectOf(raw.single_predicate);
      checkFields(single, at, report, MATCHER_FIELD_TABLES.SinglePredicate!, 'SinglePredicate');
      const input = compileInput(single.input, `${at}.input`, report, domain);
      const how = oneOf(single, ['value_match', 'custom_match'], at, report);
      if (how === 'value_match') {
        const matcher = objectOf(single.value_match);
        checkFields(
          matcher,
          `${at}.value_match`,
          report,
          MATCHER_FIELD_TABLES.StringMatcher!,
          'StringMatcher',
        );
        const test = attempt(report, `${at}.value_match`, () =>
          compileStringMatcher(matcher, `${at}.value_match`),
        );
        if (test === undefined) return () => () => false;
        // No value (a header not sent) matches no string, as the reference's.
        return () => (d) => {
          const value = input(d);
          return value !== null && test(value);
        };
      }
      if (how === 'custom_match') {
        const ext = typed(single.custom_match, `${at}.custom_match`, report);
        const custom = ext && domain.customMatch(ext[0], ext[1], `${at}.custom_match.typed_config`, report);
        if (!custom) return () => () => false;
        return (counters) => {
          const test = custom(counters);
          return (d) => test(input(d));
        };
      }
      return () => () => false;
    }
    case 'or_matcher':
    case 'and_matcher': {
      const list = objectOf(raw[kind]);
      checkFields(list, at, report, MATCHER_FIELD_TABLES.PredicateList!, 'PredicateList');
      const items = listOf(list.predicate);
      if (items.length < 2) report.error(`${at}.predicate`, 'a PredicateList needs two or more predicates');
      const plans = items.map((p, i) => compilePredicate(p, `${at}.predicate[${i}]`, report, domain));
      return (counters) => {
        const tests = plans.map((p) => p(counters));
        return kind === 'or_matcher' ? (d) => tests.some((t) => t(d)) : (d) => tests.every((t) => t(d));
      };
    }
    case 'not_matcher': {
      const inner = compilePredicate(objectOf(raw.not_matcher), at, report, domain);
      return (counters) => {
        const test = inner(counters);
        return (d) => !test(d);
      };
    }
    default:
      return () => () => false;
  }
}

/** An `OnMatch`: the action, or the nested matcher's result (null when it does not match). */
function compileOnMatch<D, A>(
  raw: JsonObject,
  path: string,
  report: Report,
  domain: MatcherDomain<D, A>,
): Plan<D, A | null> {
  checkFields(raw, path, report, MATCHER_FIELD_TABLES.OnMatch!, 'OnMatch');
  if (raw.keep_matching === true)
    report.unsupported(
      `${path}.keep_matching`,
      `OnMatch.keep_matching is not implemented for ${domain.what} (its matcher decides at the first match)`,
    );
  const kind = oneOf(raw, ['action', 'matcher'], path, report);
  if (kind === 'matcher') return compileMatcher(objectOf(raw.matcher), `${path}.matcher`, report, domain);
  if (kind !== 'action') return never;
  const ext = typed(raw.action, `${path}.action`, report);
  const action = ext && domain.action(ext[0], ext[1], `${path}.action.typed_config`, report);
  if (action === undefined) return never;
  return () => () => action;
}

/**
 * Compiles a `Matcher`. A list tries its field matchers in order, the first whose predicate
 * holds and whose `on_match` yields deciding; a nested matcher that yields nothing lets the
 * next one try. A map looks its input's value up exactly or by the longest prefix. When
 * nothing decides, `on_no_match` does, else the matcher yields null.
 */
export function compileMatcher<D, A>(
  raw: JsonObject,
  path: string,
  report: Report,
  domain: MatcherDomain<D, A>,
): MatcherPlan<D, A> {
  checkFields(raw, path, report, MATCHER_FIELD_TABLES.Matcher!, 'Matcher');
  const noMatch =
    raw.on_no_match === undefined
      ? never
      : compileOnMatch(objectOf(raw.on_no_match), `${path}.on_no_match`, report, domain);
  const kind = oneOf(raw, ['matcher_list', 'matcher_tree'], path, report);
  const at = `${path}.${kind}`;
  if (kind === 'matcher_list') {
    const list = objectOf(raw.matcher_list);
    checkFields(list, at, report, MATCHER_FIELD_TABLES.MatcherList!, 'MatcherList');
    const fields = listOf(list.matchers).map((m, i) => {
      const here = `${at}.matchers[${i}]`;
      checkFields(m, here, report, MATCHER_FIELD_TABLES.FieldMatcher!, 'FieldMatcher');
      if (m.predicate === undefined) report.error(`${here}.predicate`, 'required field missing', 'missing');
      if (m.on_match === undefined) report.error(`${here}.on_match`, 'required field missing', 'missing');
      return {
        predicate: compilePredicate(objectOf(m.predicate), `${here}.predicate`, report, domain),
        onMatch: compileOnMatch(objectOf(m.on_match), `${here}.on_match`, report, domain),
      };
    });
    if (fields.length === 0)
      report.error(`${at}.matchers`, 'a MatcherList needs at least one matcher', 'missing');
    return (counters) => {
      const bound = fields.map((f) => ({ test: f.predicate(counters), onMatch: f.onMatch(counters) }));
      const otherwise = noMatch(counters);
      return (d) => {
        for (const f of bound) {
          if (!f.test(d)) continue;
          const result = f.onMatch(d);
          if (result !== null) return result;
        }
        return otherwise(d);
      };
    };
  }
  if (kind === 'matcher_tree') {
    const tree = objectOf(raw.matcher_tree);
    checkFields(tree, at, report, MATCHER_FIELD_TABLES.MatcherTree!, 'MatcherTree');
    const input = compileInput(tree.input, `${at}.input`, report, domain);
    const mapKind = oneOf(tree, ['exact_match_map', 'prefix_match_map', 'custom_match'], at, report);
    if (mapKind !== 'exact_match_map' && mapKind !== 'prefix_match_map') return noMatch;
    const map = objectOf(tree[mapKind]);
    checkFields(map, `${at}.${mapKind}`, report, MATCHER_FIELD_TABLES.MatchMap!, 'MatchMap');
    const entries = Object.entries(objectOf(map.map)).map(
      ([key, onMatch]) =>
        [
          key,
          compileOnMatch(objectOf(onMatch as JsonObject), `${at}.${mapKind}.map.${key}`, report, domain),
        ] as const,
    );
    if (entries.length === 0)
      report.error(`${at}.${mapKind}.map`, 'a MatchMap needs at least one entry', 'missing');
    // Longest first, so the first prefix that decides is the longest one that does.
    if (mapKind === 'prefix_match_map') entries.sort(([a], [b]) => b.length - a.length);
    return (counters) => {
      const bound = entries.map(([key, plan]) => [key, plan(counters)] as const);
      const exact = new Map(bound);
      const otherwise = noMatch(counters);
      if (mapKind === 'exact_match_map')
        return (d) => {
          const value = input(d);
          const then = value === null ? undefined : exact.get(value);
          return then?.(d) ?? otherwise(d);
        };
      return (d) => {
        const value = input(d);
        if (value !== null)
          for (const [key, then] of bound) {
            if (!value.startsWith(key)) continue;
            const result = then(d);
            if (result !== null) return result;
          }
        return otherwise(d);
      };
    };
  }
  return noMatch;
}
