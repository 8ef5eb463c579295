/**
 * Tag extraction: turns `cluster.foo.upstream_rq_200` into the name `cluster.upstream_rq`
 * with tags `proxy.response_code=200`, `proxy.cluster_name=foo` (Prometheus labels). The
 * default extractors are the reference's, with `envoy.` names renamed `proxy.`.
 */

import type { RE2 } from 're2-wasm';
import { newRe2 } from '../re2.js';

export interface Tag {
  name: string;
  value: string;
}

/** A name with its tags removed, and the tags. */
export interface Extracted {
  name: string;
  tags: Tag[];
}

/**
 * One extractor run on a name: on a match it adds its tag to `tags` and the span of group 1
 * (removed from the name) to `spans` as two numbers. No object per match: the first
 * Prometheus scrape runs every extractor on a million names.
 */
type Match = (statName: string, tagName: string, tags: Tag[], spans: number[]) => boolean;

interface Extractor {
  name: string;
  match: Match;
  /** Quick pre-filter: skip names that lack it. */
  substr: string;
  /** Only run when the first dot-token equals this; '' = always. */
  prefix: string;
}

/** The reference's default extractors, in its table order. */
const DEFAULTS: Array<[name: string, regex: string, substr: string]> = [
  ['proxy.response_code', '_rq(_(\\d{3}))$', '_rq_'],
  ['proxy.response_code_class', '_rq_(\\d)xx$', '_rq_'],
  [
    'proxy.dynamo_partition_id',
    '^http(?=\\.).*?\\.dynamodb\\.table(?=\\.).*?\\.capacity(?=\\.).*?(\\.__partition_id=(\\w{7}))$',
    '.dynamodb.table.',
  ],
  [
    'proxy.dynamo_operation',
    '^http(?=\\.).*?\\.dynamodb.(?:operation|table(?=\\.).*?\\.capacity)(\\.(.*?))(?:\\.|$)',
    '.dynamodb.',
  ],
  [
    'proxy.mongo_callsite',
    '^mongo(?=\\.).*?\\.collection(?=\\.).*?\\.callsite\\.((.*?)\\.).*?query.\\w+?$',
    '.collection.',
  ],
  ['proxy.dynamo_table', '^http(?=\\.).*?\\.dynamodb.(?:table|error)\\.((.*?)\\.)', '.dynamodb.'],
  ['proxy.mongo_collection', '^mongo(?=\\.).*?\\.collection\\.((.*?)\\.).*?query.\\w+?$', '.collection.'],
  ['proxy.mongo_cmd', '^mongo(?=\\.).*?\\.cmd\\.((.*?)\\.)\\w+?$', '.cmd.'],
  ['proxy.grpc_bridge_method', '^cluster(?=\\.).*?\\.grpc(?=\\.).*\\.((.*?)\\.)\\w+?$', '.grpc.'],
  ['proxy.http_user_agent', '^http(?=\\.).*?\\.user_agent\\.((.*?)\\.)\\w+?$', '.user_agent.'],
  ['proxy.virtual_cluster', '^vhost(?=\\.).*?\\.vcluster\\.((.*?)\\.)\\w+?$', '.vcluster.'],
  ['proxy.fault_downstream_cluster', '^http(?=\\.).*?\\.fault\\.((.*?)\\.)\\w+?$', '.fault.'],
  ['proxy.ssl_cipher', '^listener(?=\\.).*?\\.ssl\\.cipher(\\.(.*?))$', ''],
  ['cipher_suite', '^cluster(?=\\.).*?\\.ssl\\.ciphers(\\.(.*?))$', '.ssl.ciphers.'],
  ['proxy.grpc_bridge_service', '^cluster(?=\\.).*?\\.grpc\\.((.*?)\\.)', '.grpc.'],
  ['proxy.tcp_prefix', '^tcp\\.((.*?)\\.)\\w+?$', ''],
  ['proxy.clientssl_prefix', '^auth\\.clientssl\\.((.*?)\\.)\\w+?$', ''],
  ['proxy.ratelimit_prefix', '^ratelimit\\.((.*?)\\.)\\w+?$', ''],
  ['proxy.cluster_name', '^cluster\\.((.*?)\\.)', ''],
  ['proxy.http_conn_manager_prefix', '^listener(?=\\.).*?\\.http\\.((.*?)\\.)', '.http.'],
  ['proxy.http_conn_manager_prefix', '^http\\.((.*?)\\.)', ''],
  ['proxy.listener_address', '^listener\\.(((?:[_.\\d]*|[_\\[\\]aAbBcCdDeEfF\\d]*))\\.)', ''],
  ['proxy.virtual_host', '^vhost\\.((.*?)\\.)', ''],
  ['proxy.mongo_prefix', '^mongo\\.((.*?)\\.)', ''],
  ['proxy.rds_route_config', '^http(?=\\.).*?\\.rds\\.((.*?)\\.)\\w+?$', '.rds.'],
  ['proxy.worker_id', '^listener_manager\\.((worker_\\d+)\\.)', 'listener_manager.worker_'],
];

/** `^word\.` or `^word(?=\.)` at the start: the extractor only applies under `word.`. */
function prefixOf(regex: string): string {
  const m = /^\^([A-Za-z0-9_]+)(?:\\\.|\(\?=\\\.\))/.exec(regex);
  return m ? m[1]! : '';
}

/** The reference's rule: group 1 is removed from the name; the value is group 2 if any, else group 1. */
function found(
  groups: ArrayLike<string | undefined>,
  start: number,
  end: number,
  tagName: string,
  tags: Tag[],
  spans: number[],
): true {
  tags.push({ name: tagName, value: groups.length > 2 ? (groups[2] ?? '') : (groups[1] ?? '') });
  spans.push(start, end);
  return true;
}

/** A backtracking match: the built-in extractors, and user regexes RE2 cannot compile. */
function jsMatch(regex: RegExp): Match {
  return (statName, tagName, tags, spans) => {
    const m = regex.exec(statName);
    const at = m?.indices?.[1];
    if (!m || m[1] === undefined || !at) return false;
    return found(m, at[0], at[1], tagName, tags, spans);
  };
}

/**
 * A match whose group texts are known but not their positions (RE2, or a regex without the
 * `d` flag, whose match indices make every match allocate): group 1 is placed by finding its
 * text in the whole match. Only when that text occurs there twice is the position ambiguous;
 * then the backtracking `d` regex decides, on a name already matched.
 */
function placed(exec: (statName: string) => RegExpExecArray | null, fallback: RegExp): Match {
  const js = jsMatch(fallback);
  return (statName, tagName, tags, spans) => {
    const m = exec(statName);
    const whole = m?.[0];
    if (!m || whole === undefined || m[1] === undefined) return false;
    const at = whole.indexOf(m[1]);
    if (whole.indexOf(m[1], at + 1) >= 0) return js(statName, tagName, tags, spans);
    const start = m.index + at;
    return found(m, start, start + m[1].length, tagName, tags, spans);
  };
}

/** A user's regex matched by RE2, in linear time (see `placed`). */
function re2Match(re: RE2, fallback: RegExp): Match {
  return placed((statName) => re.exec(statName) as RegExpExecArray | null, fallback);
}

/** A built-in extractor: matched without the `d` flag (see `placed`). */
function builtinMatch(regex: string): Match {
  const plain = new RegExp(regex);
  return placed((statName) => plain.exec(statName), new RegExp(regex, 'd'));
}

function makeExtractor(name: string, regex: string, substr = ''): Extractor {
  return { name, match: builtinMatch(regex), substr, prefix: prefixOf(regex) };
}

/**
 * A `stats_tags[].regex`: on RE2 when it compiles there, so a careless pattern cannot
 * stall stat creation; patterns with lookaround (which the reference's std::regex and its
 * own defaults use) stay ECMAScript. Throws a SyntaxError for an invalid pattern.
 */
function userMatch(pattern: string): Match {
  const js = new RegExp(pattern, 'd');
  try {
    return re2Match(newRe2(pattern, 'u'), js);
  } catch {
    return jsMatch(js);
  }
}

/** Runs one extractor on a name, adding its tag and the span it removes. */
function runExtractor(e: Extractor, statName: string, tags: Tag[], spans: number[]): void {
  if (e.substr && !statName.includes(e.substr)) return;
  e.match(statName, e.name, tags, spans);
}

/** A tag specifier of `stats_config.stats_tags`. */
export interface TagSpecifier {
  tag_name?: string;
  regex?: string;
  fixed_value?: string;
}

/** The `stats_config` fields tag extraction reads. */
export interface StatsConfig {
  stats_tags?: TagSpecifier[];
  use_all_default_tags?: boolean;
}

/** Thrown for a `stats_config` the reference would reject; the message says what to fix. */
export class TagConfigError extends Error {}

/** The reference's config names use `envoy.`; ours use `proxy.`. Both find a default. */
const canonicalTagName = (name: string): string =>
  name.startsWith('envoy.') ? `proxy.${name.slice('envoy.'.length)}` : name;

/**
 * Extracts tags from stat names. Built once from `stats_config` and the `--stats-tag`
 * universal tags; renderers cache its results on the stats themselves.
 */
export class TagProducer {
  private readonly anywhere: Extractor[] = [];
  /** Extractors by the first dot-token a name must have (a handful of prefixes). */
  private readonly byPrefix: Array<{ prefix: string; extractors: Extractor[] }> = [];
  /** Fixed tags on every stat: universal ones, then `fixed_value` specifiers. */
  readonly fixedTags: Tag[];

  constructor(config: StatsConfig = {}, universal: Tag[] = []) {
    const fixed: Tag[] = [...universal];
    const names = new Set<string>();
    for (const [i, spec] of (config.stats_tags ?? []).entries()) {
      const name = spec.tag_name ?? '';
      if (!name) throw new TagConfigError(`stats_config.stats_tags[${i}].tag_name: must not be empty`);
      if (names.has(name)) throw new TagConfigError(`Tag name '${name}' specified twice.`);
      names.add(name);
      if (spec.fixed_value !== undefined) {
        fixed.push({ name, value: spec.fixed_value });
      } else if (spec.regex) {
        let match: Match;
        try {
          match = userMatch(spec.regex);
        } catch (err) {
          throw new TagConfigError(
            `stats_config.stats_tags[${i}].regex: invalid regular expression '${spec.regex}': ${(err as Error).message}`,
          );
        }
        this.add({ name, match, substr: '', prefix: prefixOf(spec.regex) });
      } else {
        const matching = DEFAULTS.filter(([n]) => n === canonicalTagName(name));
        if (matching.length === 0) {
          throw new TagConfigError(
            `No regex specified for tag specifier and no default regex for name: '${name}'`,
          );
        }
        for (const [, regex, substr] of matching) this.add(makeExtractor(name, regex, substr));
      }
    }
    if (config.use_all_default_tags !== false) {
      const taken = new Set([...names].map(canonicalTagName));
      for (const [name, regex, substr] of DEFAULTS) {
        if (!taken.has(name)) this.add(makeExtractor(name, regex, substr));
      }
    }
    this.fixedTags = fixed;
  }

  private add(e: Extractor): void {
    if (!e.prefix) {
      this.anywhere.push(e);
      return;
    }
    const group = this.byPrefix.find((g) => g.prefix === e.prefix);
    if (group) group.extractors.push(e);
    else this.byPrefix.push({ prefix: e.prefix, extractors: [e] });
  }

  /** The tag-extracted name and the tags of `statName` (callers cache; see the Prometheus view). */
  extract(statName: string): Extracted {
    const tags: Tag[] = this.fixedTags.length > 0 ? [...this.fixedTags] : [];
    const spans: number[] = [];
    for (const e of this.anywhere) runExtractor(e, statName, tags, spans);
    for (const { prefix, extractors } of this.byPrefix) {
      // the first dot-token is `prefix`, tested without cutting it out of every name
      if (
        statName.startsWith(prefix) &&
        (statName.length === prefix.length || statName.charCodeAt(prefix.length) === DOT)
      ) {
        for (const e of extractors) runExtractor(e, statName, tags, spans);
        break;
      }
    }
    return { name: spans.length === 0 ? statName : removed(statName, spans), tags };
  }
}

const DOT = 46;

/** `statName` without the spans (flat start, end pairs; they may overlap). */
function removed(statName: string, spans: number[]): string {
  if (spans.length === 2) return statName.slice(0, spans[0]) + statName.slice(spans[1]);
  const pairs: Array<[number, number]> = [];
  for (let i = 0; i < spans.length; i += 2) pairs.push([spans[i]!, spans[i + 1]!]);
  pairs.sort((a, b) => a[0] - b[0]);
  let name = '';
  let at = 0;
  for (const [start, end] of pairs) {
    if (start > at) name += statName.slice(at, start);
    at = Math.max(at, end);
  }
  return name + statName.slice(at);
}
