import { cumulativeCounts } from '../../src/stats/bins.js';
import type { Counter, Gauge, Histogram, TextReadout } from '../../src/stats/store.js';
import type { Tag, TagProducer } from '../../src/stats/tags.js';
import { DEFAULT_BUCKETS } from './histogram.js';
import type { Selection } from './select.js';

/** A stat's Prometheus identity: metric name and rendered label pairs (without braces). */
interface PromName {
  metric: string;
  labels: string;
}

/** Every char outside `[a-zA-Z0-9_]` becomes `_`; a leading digit gets a `_` prefix. */
export function sanitizePromName(name: string): string {
  const s = name.replace(/[^a-zA-Z0-9_]/g, '_');
  return /^[0-9]/.test(s) ? `_${s}` : s;
}

/** Label values escaped as exposition format 0.0.4 requires (`\`, `"`, newline). */
function escapeLabelValue(v: string): string {
  return /[\\"\n]/.test(v) ? v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n') : v;
}

function renderLabels(tags: Tag[]): string {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const t of tags) {
    const name = sanitizePromName(t.name);
    // a repeated label name makes the whole exposition unparsable; the first one wins
    if (seen.has(name)) continue;
    seen.add(name);
    out.push(`${name}="${escapeLabelValue(t.value)}"`);
  }
  return out.join(',');
}

/** Per tag producer: stat name -> Prometheus identity, so tag regexes run once per name. */
const nameCache = new WeakMap<TagProducer, Map<string, PromName>>();

function promName(tags: TagProducer, statName: string): PromName {
  let cache = nameCache.get(tags);
  if (!cache) {
    cache = new Map();
    nameCache.set(tags, cache);
  }
  let out = cache.get(statName);
  if (!out) {
    const e = tags.extract(statName);
    out = { metric: sanitizePromName(`proxy_${e.name}`), labels: renderLabels(e.tags) };
    cache.set(statName, out);
  }
  return out;
}

const withLabel = (labels: string, extra: string): string => (labels ? `${labels},${extra}` : extra);

/** Stats grouped by metric name; groups sorted by name, members keep their (name) order. */
function groups<T extends { name: string }>(
  tags: TagProducer,
  stats: T[],
): Array<[string, Array<[T, PromName]>]> {
  const byMetric = new Map<string, Array<[T, PromName]>>();
  for (const s of stats) {
    const p = promName(tags, s.name);
    const list = byMetric.get(p.metric);
    if (list) list.push([s, p]);
    else byMetric.set(p.metric, [[s, p]]);
  }
  return [...byMetric].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/**
 * Text exposition format 0.0.4: counters, gauges (then text readouts when asked, as gauges
 * of value 0 labelled `text_value`), then histograms; one `# TYPE` per metric name and an
 * empty line after each group.
 */
export function renderPrometheus(sel: Selection, tags: TagProducer, textReadouts: boolean): string {
  const out: string[] = [];
  for (const [metric, members] of groups<Counter>(tags, sel.counters)) {
    out.push(`# TYPE ${metric} counter`);
    for (const [s, p] of members) out.push(`${metric}{${p.labels}} ${s.shown}`);
    out.push('');
  }
  for (const [metric, members] of groups<Gauge>(tags, sel.gauges)) {
    out.push(`# TYPE ${metric} gauge`);
    for (const [s, p] of members) out.push(`${metric}{${p.labels}} ${s.value}`);
    out.push('');
  }
  if (textReadouts) {
    for (const [metric, members] of groups<TextReadout>(tags, sel.textReadouts)) {
      out.push(`# TYPE ${metric} gauge`);
      for (const [s, p] of members) {
        out.push(`${metric}{${withLabel(p.labels, `text_value="${escapeLabelValue(s.value)}"`)}} 0`);
      }
      out.push('');
    }
  }
  for (const [metric, members] of groups<Histogram>(tags, sel.histograms)) {
    out.push(`# TYPE ${metric} histogram`);
    for (const [h, p] of members) {
      const w = h.cumulativeWindow();
      const counts = cumulativeCounts(w?.bins ?? null, DEFAULT_BUCKETS);
      for (let i = 0; i < DEFAULT_BUCKETS.length; i++) {
        out.push(`${metric}_bucket{${withLabel(p.labels, `le="${DEFAULT_BUCKETS[i]}"`)}} ${counts[i]}`);
      }
      out.push(`${metric}_bucket{${withLabel(p.labels, 'le="+Inf"')}} ${w?.count ?? 0}`);
      out.push(`${metric}_sum{${p.labels}} ${w?.sum ?? 0}`);
      out.push(`${metric}_count{${p.labels}} ${w?.count ?? 0}`);
    }
    out.push('');
  }
  return out.length === 0 ? '' : `${out.join('\n')}\n`;
}
