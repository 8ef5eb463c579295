import { DEFAULT_HISTOGRAM_BUCKETS, type HistogramBuckets } from '../../src/stats/buckets.js';
import { compileFilter, type NameFilter } from '../../src/stats/filter.js';

export const STAT_TYPES = ['All', 'Counters', 'Gauges', 'Histograms', 'TextReadouts'] as const;
export type StatType = (typeof STAT_TYPES)[number];
export const FORMATS = ['text', 'json', 'prometheus', 'html', 'active-html'] as const;
export type StatsFormat = (typeof FORMATS)[number];
/** `none` and `summary` both mean quantile summaries. */
export const BUCKET_MODES = ['none', 'summary', 'cumulative', 'disjoint'] as const;
export type BucketMode = (typeof BUCKET_MODES)[number];

/** A parsed `/stats` query. */
export interface StatsParams {
  usedOnly: boolean;
  /** The `filter` as given ('' = none) and its compiled test (null = keep everything). */
  filterSource: string;
  filter: NameFilter | null;
  type: StatType;
  format: StatsFormat;
  histogramBuckets: BucketMode;
  /** Prometheus: include text readouts as gauges labelled `text_value`. */
  textReadouts: boolean;
  /** Prometheus: `names=proxy|envoy` (the prefix of metric and default tag names); absent: the server's default. */
  names?: PrometheusNames;
  /** Each histogram's bucket bounds (`stats_config.histogram_bucket_settings`; not from the query). */
  buckets: HistogramBuckets;
}

export const PROMETHEUS_NAMES = ['proxy', 'envoy'] as const;
export type PrometheusNames = (typeof PROMETHEUS_NAMES)[number];

/** A rendered admin answer (the shape `src/admin/registry.ts` adapts). */
export interface Rendered {
  status: number;
  contentType: string;
  body: string;
}

export const TEXT = 'text/plain; charset=UTF-8';

const bad = (body: string): Rendered => ({ status: 400, contentType: TEXT, body });

const oneOf = <T extends string>(values: readonly T[], v: string): v is T =>
  (values as readonly string[]).includes(v);

/**
 * Parses a `/stats` query; `format` is preset for `/stats/prometheus`. Bad values answer
 * 400 with a usage line naming the accepted values.
 */
export function parseStatsParams(
  query: URLSearchParams,
  preset?: StatsFormat,
): { ok: true; params: StatsParams } | { ok: false; response: Rendered } {
  const format = preset ?? query.get('format') ?? 'text';
  if (!oneOf(FORMATS, format)) {
    return { ok: false, response: bad('usage: /stats?format=(html|active-html|json|prometheus|text)\n\n') };
  }
  const type = query.get('type') ?? 'All';
  if (!oneOf(STAT_TYPES, type)) {
    return {
      ok: false,
      response: bad(
        'invalid &type= param\nusage: /stats?type=(All|Counters|Gauges|Histograms|TextReadouts)\n',
      ),
    };
  }
  const histogramBuckets = query.get('histogram_buckets') ?? 'none';
  if (!oneOf(BUCKET_MODES, histogramBuckets)) {
    return {
      ok: false,
      response: bad('usage: /stats?histogram_buckets=(cumulative|disjoint|summary|none)\n\n'),
    };
  }
  const names = query.get('names');
  if (names !== null && !oneOf(PROMETHEUS_NAMES, names)) {
    return { ok: false, response: bad('usage: /stats/prometheus?names=(proxy|envoy)\n\n') };
  }
  const filterSource = query.get('filter') ?? '';
  let filter: NameFilter | null = null;
  if (filterSource) {
    filter = compileFilter(filterSource);
    if (!filter) return { ok: false, response: bad(`Invalid re2 regex: "${filterSource}"\n`) };
  }
  return {
    ok: true,
    params: {
      usedOnly: query.has('usedonly'),
      filterSource,
      filter,
      type,
      format,
      histogramBuckets,
      textReadouts: query.has('text_readouts'),
      ...(names === null ? {} : { names }),
      buckets: DEFAULT_HISTOGRAM_BUCKETS,
    },
  };
}
