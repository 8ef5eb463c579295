/**
 * The statsd lines of one flush, as the reference's statsd and DogStatsD sinks write them:
 * `prefix.name:delta|c` for each used counter, `prefix.name:value|g` for each used gauge and
 * `prefix.name:value|ms` for each sample a histogram took in the interval. DogStatsD names are
 * tag-extracted, their tags after the type: `prefix.cluster.upstream_rq:3|c|#envoy.cluster_name:web`.
 */
import { binLower } from '../bins.js';
import type { Tag, TagProducer } from '../tags.js';
import type { MetricSnapshot } from './snapshot.js';

/** How a sink names what it sends. */
export interface LineFormat {
  prefix: string;
  /** DogStatsD: tag-extracted names, tags after the type; null: full names, no tags. */
  tags: TagProducer | null;
}

/**
 * The default tags are `proxy.*` here; the sinks send the reference's names
 * (`envoy.cluster_name`), which Datadog's Envoy dashboards and a metrics service query, as
 * their statsd prefix is `envoy` too.
 */
export function referenceTagName(tag: Tag): string {
  return tag.name.startsWith('proxy.') ? `envoy.${tag.name.slice('proxy.'.length)}` : tag.name;
}

/**
 * A histogram's sample as statsd reads it: the lower edge of its bin, which holds two
 * significant digits (exact for the integer milliseconds below 100 that most timers record).
 */
function sampleValue(key: number): string {
  return String(Number(binLower(key).toPrecision(2)));
}

/**
 * The head (`prefix.name`) and tail (`|#tags`) of a stat's lines, kept per stat object: the
 * tag extractors run once per stat, not at every flush.
 */
export class LineMaker {
  private readonly parts = new WeakMap<object, [head: string, tail: string]>();

  constructor(private readonly format: LineFormat) {}

  private partsOf(stat: { name: string }): [string, string] {
    let parts = this.parts.get(stat);
    if (parts) return parts;
    const { prefix, tags } = this.format;
    if (tags) {
      const extracted = tags.extract(stat.name);
      const tail = extracted.tags.map((t) => `${referenceTagName(t)}:${t.value}`).join(',');
      parts = [`${prefix}.${extracted.name}`, tail ? `|#${tail}` : ''];
    } else parts = [`${prefix}.${stat.name}`, ''];
    this.parts.set(stat, parts);
    return parts;
  }

  private line(stat: { name: string }, value: string, type: string): string {
    const [head, tail] = this.partsOf(stat);
    return `${head}:${value}|${type}${tail}`;
  }

  /** Every line of a flush, counters first, then gauges, then the histograms' samples. */
  lines(snapshot: MetricSnapshot): string[] {
    const out: string[] = [];
    for (const { counter, delta } of snapshot.counters) out.push(this.line(counter, String(delta), 'c'));
    // A signed gauge means "change by" to statsd; a gauge here is never meant so.
    for (const gauge of snapshot.gauges) out.push(this.line(gauge, String(Math.max(0, gauge.value)), 'g'));
    for (const histogram of snapshot.histograms) {
      for (const [key, count] of histogram.interval?.bins ?? []) {
        const line = this.line(histogram, sampleValue(key), 'ms');
        for (let i = 0; i < count; i++) out.push(line);
      }
    }
    return out;
  }
}

/**
 * Lines packed into datagrams of at most `maxBytes`, joined by newlines, as the reference's
 * buffered UDP writer does; a line that long goes alone, and `maxBytes` 0 sends each
 * line alone (the statsd sink's way).
 */
export function datagrams(lines: readonly string[], maxBytes: number): string[] {
  if (maxBytes <= 0) return [...lines];
  const out: string[] = [];
  let current = '';
  let bytes = 0;
  for (const line of lines) {
    const size = Buffer.byteLength(line);
    // A line that does not fit sends what is held first, so the lines keep their order.
    if (current && bytes + 1 + size > maxBytes) {
      out.push(current);
      current = '';
    }
    if (size >= maxBytes) {
      out.push(line);
      continue;
    }
    bytes = current ? bytes + 1 + size : size;
    current = current ? `${current}\n${line}` : line;
  }
  if (current) out.push(current);
  return out;
}
