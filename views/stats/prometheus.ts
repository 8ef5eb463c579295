import { cumulativeCounts } from '../../src/stats/bins.js';
import { DEFAULT_HISTOGRAM_BUCKETS, type HistogramBuckets } from '../../src/stats/buckets.js';
import type { Counter, Gauge, RenderSlot } from '../../src/stats/store.js';
import type { Tag, TagProducer } from '../../src/stats/tags.js';
import { CHUNK_CHARS } from '../json-chunks.js';
import type { PrometheusNames } from './params.js';
import type { Selection } from './select.js';

/** Every char outside `[a-zA-Z0-9_]` becomes `_`; a leading digit gets a `_` prefix. */
export function sanitizePromName(name: string): string {
  const s = name.replace(/[^a-zA-Z0-9_]/g, '_');
  return /^[0-9]/.test(s) ? `_${s}` : s;
}

/** Label values escaped as exposition format 0.0.4 requires (`\`, `"`, newline). */
function escapeLabelValue(v: string): string {
  return /[\\"\n]/.test(v) ? v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n') : v;
}

/**
 * Label names sanitized, by names and tag name: a handful of tag names label a million stats.
 * With `envoy` names the default tags (`proxy.cluster_name`) are labelled as the reference
 * labels them (`envoy_cluster_name`); tags named by the user or `--stats-tag` keep their names.
 */
const labelNames: Record<PrometheusNames, Map<string, string>> = { proxy: new Map(), envoy: new Map() };

function labelName(tag: string, names: PrometheusNames): string {
  let name = labelNames[names].get(tag);
  if (name === undefined) {
    name = sanitizePromName(names === 'envoy' && tag.startsWith('proxy.') ? `envoy.${tag.slice(6)}` : tag);
    labelNames[names].set(tag, name);
  }
  return name;
}

function renderLabels(tags: Tag[], names: PrometheusNames): string {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const t of tags) {
    const name = labelName(t.name, names);
    // a repeated label name makes the whole exposition unparsable; the first one wins
    if (seen.has(name)) continue;
    seen.add(name);
    out.push(`${name}="${escapeLabelValue(t.value)}"`);
  }
  return out.join(',');
}

/** Label pairs by the tags they render, one level per tag (name, then value). */
interface LabelNode {
  labels: string | undefined;
  next: Map<string, Map<string, LabelNode>> | undefined;
}

/**
 * What the identities one tag producer made under one naming share: metric names by extracted
 * name (a hundred or so for a million stats) and label strings by their tags (one per
 * cluster, say), so the strings on the stats are shared rather than a million copies, and a
 * label string is found by its tags without rendering it again. Its identity is what a stat's
 * render slot records, so a stat renders once per naming in use.
 */
interface Shared {
  tags: TagProducer;
  names: PrometheusNames;
  metrics: Map<string, string>;
  labels: LabelNode;
}

const sharedBy = new WeakMap<TagProducer, Partial<Record<PrometheusNames, Shared>>>();

function sharedOf(tags: TagProducer, names: PrometheusNames): Shared {
  let byNames = sharedBy.get(tags);
  if (!byNames) {
    byNames = {};
    sharedBy.set(tags, byNames);
  }
  let shared = byNames[names];
  if (!shared) {
    shared = { tags, names, metrics: new Map(), labels: { labels: undefined, next: undefined } };
    byNames[names] = shared;
  }
  return shared;
}

function labelsFor(root: LabelNode, tags: Tag[], names: PrometheusNames): string {
  let node = root;
  for (const t of tags) {
    node.next ??= new Map();
    let byValue = node.next.get(t.name);
    if (!byValue) {
      byValue = new Map();
      node.next.set(t.name, byValue);
    }
    let child = byValue.get(t.value);
    if (!child) {
      child = { labels: undefined, next: undefined };
      byValue.set(t.value, child);
    }
    node = child;
  }
  node.labels ??= renderLabels(tags, names);
  return node.labels;
}

/** The Prometheus metric name of `stat`; its identity is kept on the stat so tag regexes run once per name. */
function metricOf(shared: Shared, stat: { name: string } & RenderSlot): string {
  if (stat.renderedBy === shared) return stat.renderedName;
  const e = shared.tags.extract(stat.name);
  let metric = shared.metrics.get(e.name);
  if (metric === undefined) {
    metric = sanitizePromName(`${shared.names}_${e.name}`);
    shared.metrics.set(e.name, metric);
  }
  stat.renderedName = metric;
  stat.renderedLabels = labelsFor(shared.labels, e.tags, shared.names);
  stat.renderedBy = shared;
  return metric;
}

const withLabel = (labels: string, extra: string): string => (labels ? `${labels},${extra}` : extra);

/** How many stats are named between two empty pieces (turns for the event loop) while grouping. */
const GROUP_STEP = 2048;

/**
 * Groups of the store's whole sorted lists (what an unfiltered scrape renders), by list and
 * the producer they were made with: the lists are rebuilt, never changed, when stats are
 * created, so a scrape loop groups a million stats once.
 */
const groupsCache = new WeakMap<object, { shared: Shared; groups: Array<[string, unknown[]]> }>();

/**
 * Stats grouped by metric name; groups sorted by name, members keep their (name) order.
 * Yields empty pieces along the way: naming a million stats the first time takes a while,
 * and the admin gives the event loop a turn at each piece.
 */
function* groups<T extends { name: string } & RenderSlot>(
  shared: Shared,
  stats: T[],
): Generator<string, Array<[string, T[]]>> {
  const hit = groupsCache.get(stats);
  if (hit?.shared === shared) return hit.groups as Array<[string, T[]]>;
  const byMetric = new Map<string, T[]>();
  for (let i = 0; i < stats.length; i++) {
    const s = stats[i]!;
    const metric = metricOf(shared, s);
    const list = byMetric.get(metric);
    if (list) list.push(s);
    else byMetric.set(metric, [s]);
    if (i % GROUP_STEP === GROUP_STEP - 1) yield '';
  }
  const out = [...byMetric].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  groupsCache.set(stats, { shared, groups: out });
  return out;
}

/**
 * Text exposition format 0.0.4: counters, gauges (then text readouts when asked, as gauges
 * of value 0 labelled `text_value`), then histograms; one `# TYPE` per metric name and an
 * empty line after each group; in pieces of about `limit` characters. `names` is the prefix
 * of metric names and of the default tags' labels: `proxy_`, or the reference's `envoy_`.
 */
export function* prometheusChunks(
  sel: Selection,
  tags: TagProducer,
  textReadouts: boolean,
  names: PrometheusNames = 'proxy',
  limit = CHUNK_CHARS,
  /** Each histogram's `le` bounds (`stats_config.histogram_bucket_settings`). */
  buckets: HistogramBuckets = DEFAULT_HISTOGRAM_BUCKETS,
): Generator<string> {
  const shared = sharedOf(tags, names);
  let out = '';
  const scalars: Array<[string, Array<Counter | Gauge>]> = [
    ['counter', sel.counters],
    ['gauge', sel.gauges],
  ];
  for (const [type, stats] of scalars)
    for (const [metric, members] of yield* groups(shared, stats)) {
      out += `# TYPE ${metric} ${type}\n`;
      for (const s of members) {
        out += `${metric}{${s.renderedLabels}} ${s.shown}\n`;
        if (out.length >= limit) {
          yield out;
          out = '';
        }
      }
      out += '\n';
    }
  if (textReadouts) {
    for (const [metric, members] of yield* groups(shared, sel.textReadouts)) {
      out += `# TYPE ${metric} gauge\n`;
      for (const s of members) {
        out += `${metric}{${withLabel(s.renderedLabels, `text_value="${escapeLabelValue(s.value)}"`)}} 0\n`;
      }
      out += '\n';
    }
  }
  for (const [metric, members] of yield* groups(shared, sel.histograms)) {
    out += `# TYPE ${metric} histogram\n`;
    for (const h of members) {
      const labels = h.renderedLabels;
      const w = h.cumulativeWindow();
      const bounds = buckets.of(h.name);
      const counts = cumulativeCounts(w?.bins ?? null, bounds);
      for (let i = 0; i < bounds.length; i++) {
        out += `${metric}_bucket{${withLabel(labels, `le="${bounds[i]}"`)}} ${counts[i]}\n`;
      }
      out += `${metric}_bucket{${withLabel(labels, 'le="+Inf"')}} ${w?.count ?? 0}\n`;
      out += `${metric}_sum{${labels}} ${w?.sum ?? 0}\n`;
      out += `${metric}_count{${labels}} ${w?.count ?? 0}\n`;
      if (out.length >= limit) {
        yield out;
        out = '';
      }
    }
    out += '\n';
  }
  if (out) yield out;
}
