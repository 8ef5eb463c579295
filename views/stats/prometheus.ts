import { cumulativeCounts } from '../../src/stats/bins.js';
import type { Counter, Gauge, Histogram, RenderSlot, TextReadout } from '../../src/stats/store.js';
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

/** A stat's cached identity, valid for the tag producer that made it. */
interface Slot extends PromName {
  tags: TagProducer;
}

/** The Prometheus identity of `stat`, cached on the stat so tag regexes run once per name. */
function promName(tags: TagProducer, stat: { name: string } & RenderSlot): PromName {
  const slot = stat.rendered as Slot | undefined;
  if (slot?.tags === tags) return slot;
  const e = tags.extract(stat.name);
  const out: Slot = { metric: sanitizePromName(`proxy_${e.name}`), labels: renderLabels(e.tags), tags };
  stat.rendered = out;
  return out;
}

const withLabel = (labels: string, extra: string): string => (labels ? `${labels},${extra}` : extra);

/** Stats grouped by metric name; groups sorted by name, members keep their (name) order. */
function groups<T extends { name: string } & RenderSlot>(
  tags: TagProducer,
  stats: T[],
): Array<[string, T[]]> {
  const byMetric = new Map<string, T[]>();
  for (const s of stats) {
    const metric = promName(tags, s).metric;
    const list = byMetric.get(metric);
    if (list) list.push(s);
    else byMetric.set(metric, [s]);
  }
  return [...byMetric].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/** The label pairs of a stat already grouped (its slot is filled). */
const labelsOf = (s: RenderSlot): string => (s.rendered as Slot).labels;

/**
 * Text exposition format 0.0.4: counters, gauges (then text readouts when asked, as gauges
 * of value 0 labelled `text_value`), then histograms; one `# TYPE` per metric name and an
 * empty line after each group. Lines are appended to one string (V8 keeps it as a rope and
 * flattens once); an array of two million lines costs more in garbage collection.
 */
export function renderPrometheus(sel: Selection, tags: TagProducer, textReadouts: boolean): string {
  let out = '';
  for (const [metric, members] of groups<Counter>(tags, sel.counters)) {
    out += `# TYPE ${metric} counter\n`;
    for (const s of members) out += `${metric}{${labelsOf(s)}} ${s.shown}\n`;
    out += '\n';
  }
  for (const [metric, members] of groups<Gauge>(tags, sel.gauges)) {
    out += `# TYPE ${metric} gauge\n`;
    for (const s of members) out += `${metric}{${labelsOf(s)}} ${s.shown}\n`;
    out += '\n';
  }
  if (textReadouts) {
    for (const [metric, members] of groups<TextReadout>(tags, sel.textReadouts)) {
      out += `# TYPE ${metric} gauge\n`;
      for (const s of members) {
        out += `${metric}{${withLabel(labelsOf(s), `text_value="${escapeLabelValue(s.value)}"`)}} 0\n`;
      }
      out += '\n';
    }
  }
  for (const [metric, members] of groups<Histogram>(tags, sel.histograms)) {
    out += `# TYPE ${metric} histogram\n`;
    for (const h of members) {
      const labels = labelsOf(h);
      const w = h.cumulativeWindow();
      const counts = cumulativeCounts(w?.bins ?? null, DEFAULT_BUCKETS);
      for (let i = 0; i < DEFAULT_BUCKETS.length; i++) {
        out += `${metric}_bucket{${withLabel(labels, `le="${DEFAULT_BUCKETS[i]}"`)}} ${counts[i]}\n`;
      }
      out += `${metric}_bucket{${withLabel(labels, 'le="+Inf"')}} ${w?.count ?? 0}\n`;
      out += `${metric}_sum{${labels}} ${w?.sum ?? 0}\n`;
      out += `${metric}_count{${labels}} ${w?.count ?? 0}\n`;
    }
    out += '\n';
  }
  return out;
}
