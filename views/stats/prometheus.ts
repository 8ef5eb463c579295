import { cumulativeCounts } from '../../src/stats/bins.js';
import type { Counter, Gauge, Histogram, RenderSlot, TextReadout } from '../../src/stats/store.js';
import type { Tag, TagProducer } from '../../src/stats/tags.js';
import { CHUNK_CHARS } from '../json-chunks.js';
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

/** Label names sanitized, by tag name: a handful of tag names label a million stats. */
const labelNames = new Map<string, string>();

function labelName(tag: string): string {
  let name = labelNames.get(tag);
  if (name === undefined) {
    name = sanitizePromName(tag);
    labelNames.set(tag, name);
  }
  return name;
}

function renderLabels(tags: Tag[]): string {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const t of tags) {
    const name = labelName(t.name);
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

/**
 * Names already worked out during one render: metric names by extracted name (a hundred
 * or so for a million stats) and label strings by themselves, so the identities cached on
 * the stats share their strings instead of holding a million copies.
 */
interface Seen {
  metrics: Map<string, string>;
  labels: Map<string, string>;
}

function intern(map: Map<string, string>, s: string): string {
  const hit = map.get(s);
  if (hit !== undefined) return hit;
  map.set(s, s);
  return s;
}

/** The Prometheus identity of `stat`, cached on the stat so tag regexes run once per name. */
function promName(tags: TagProducer, stat: { name: string } & RenderSlot, seen: Seen): PromName {
  const slot = stat.rendered as Slot | undefined;
  if (slot?.tags === tags) return slot;
  const e = tags.extract(stat.name);
  let metric = seen.metrics.get(e.name);
  if (metric === undefined) {
    metric = sanitizePromName(`proxy_${e.name}`);
    seen.metrics.set(e.name, metric);
  }
  const out: Slot = { metric, labels: intern(seen.labels, renderLabels(e.tags)), tags };
  stat.rendered = out;
  return out;
}

const withLabel = (labels: string, extra: string): string => (labels ? `${labels},${extra}` : extra);

/** How many stats are named between two empty pieces (turns for the event loop) while grouping. */
const GROUP_STEP = 2048;

/**
 * Stats grouped by metric name into `into`; groups sorted by name, members keep their
 * (name) order. Yields empty pieces along the way: naming a million stats the first time
 * takes a while, and the admin gives the event loop a turn at each piece.
 */
function* groups<T extends { name: string } & RenderSlot>(
  tags: TagProducer,
  stats: T[],
  seen: Seen,
  into: Array<[string, T[]]>,
): Generator<string> {
  const byMetric = new Map<string, T[]>();
  for (let i = 0; i < stats.length; i++) {
    const s = stats[i]!;
    const metric = promName(tags, s, seen).metric;
    const list = byMetric.get(metric);
    if (list) list.push(s);
    else byMetric.set(metric, [s]);
    if (i % GROUP_STEP === GROUP_STEP - 1) yield '';
  }
  into.push(...[...byMetric].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)));
}

/** The label pairs of a stat already grouped (its slot is filled). */
const labelsOf = (s: RenderSlot): string => (s.rendered as Slot).labels;

/**
 * Text exposition format 0.0.4: counters, gauges (then text readouts when asked, as gauges
 * of value 0 labelled `text_value`), then histograms; one `# TYPE` per metric name and an
 * empty line after each group; in pieces of about `limit` characters.
 */
export function* prometheusChunks(
  sel: Selection,
  tags: TagProducer,
  textReadouts: boolean,
  limit = CHUNK_CHARS,
): Generator<string> {
  const seen: Seen = { metrics: new Map(), labels: new Map() };
  let out = '';
  const counters: Array<[string, Counter[]]> = [];
  yield* groups(tags, sel.counters, seen, counters);
  for (const [metric, members] of counters) {
    out += `# TYPE ${metric} counter\n`;
    for (const s of members) {
      out += `${metric}{${labelsOf(s)}} ${s.shown}\n`;
      if (out.length >= limit) {
        yield out;
        out = '';
      }
    }
    out += '\n';
  }
  const gauges: Array<[string, Gauge[]]> = [];
  yield* groups(tags, sel.gauges, seen, gauges);
  for (const [metric, members] of gauges) {
    out += `# TYPE ${metric} gauge\n`;
    for (const s of members) {
      out += `${metric}{${labelsOf(s)}} ${s.shown}\n`;
      if (out.length >= limit) {
        yield out;
        out = '';
      }
    }
    out += '\n';
  }
  if (textReadouts) {
    const readouts: Array<[string, TextReadout[]]> = [];
    yield* groups(tags, sel.textReadouts, seen, readouts);
    for (const [metric, members] of readouts) {
      out += `# TYPE ${metric} gauge\n`;
      for (const s of members) {
        out += `${metric}{${withLabel(labelsOf(s), `text_value="${escapeLabelValue(s.value)}"`)}} 0\n`;
      }
      out += '\n';
    }
  }
  const histograms: Array<[string, Histogram[]]> = [];
  yield* groups(tags, sel.histograms, seen, histograms);
  for (const [metric, members] of histograms) {
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
      if (out.length >= limit) {
        yield out;
        out = '';
      }
    }
    out += '\n';
  }
  if (out) yield out;
}
