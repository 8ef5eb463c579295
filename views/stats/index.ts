import { DEFAULT_HISTOGRAM_BUCKETS, type HistogramBuckets } from '../../src/stats/buckets.js';
import type { StatsStore } from '../../src/stats/store.js';
import type { TagProducer } from '../../src/stats/tags.js';
import { bodyText, type StreamedResult } from '../result.js';
import { renderActiveHtml } from './active-html.js';
import { renderHtml } from './html.js';
import { jsonStatsChunks, jsonStatsData } from './json.js';
import {
  type PrometheusNames,
  parseStatsParams,
  type Rendered,
  type StatsFormat,
  type StatsParams,
  TEXT,
} from './params.js';
import { prometheusChunks } from './prometheus.js';
import { type Selection, selectStats, selectStatsStepwise } from './select.js';
import { textChunks } from './text.js';

export type { Rendered } from './params.js';

const HTML = 'text/html; charset=UTF-8';

/** The pieces `render` makes of the selection, the selection made piece by piece first. */
function* selected(
  store: StatsStore,
  params: StatsParams,
  split: boolean,
  render: (sel: Selection) => Generator<string>,
): Generator<string> {
  yield* render(yield* selectStatsStepwise(store, params, split));
}

/**
 * `/stats` in every format: parse the query, select the stats, render. `preset` fixes the
 * format (`/stats/prometheus`). Text, JSON and Prometheus bodies come in pieces, rendered
 * as they are read (the admin streams them).
 */
export function streamStats(
  store: StatsStore,
  tags: TagProducer,
  query: URLSearchParams,
  preset?: StatsFormat,
  /** `--prometheus-names`: the Prometheus names when the query has no `names`. */
  names: PrometheusNames = 'proxy',
  /** `stats_config.histogram_bucket_settings`: each histogram's bucket bounds. */
  buckets: HistogramBuckets = DEFAULT_HISTOGRAM_BUCKETS,
): StreamedResult {
  const parsed = parseStatsParams(query, preset);
  if (!parsed.ok) return parsed.response;
  const params = { ...parsed.params, buckets };
  switch (params.format) {
    case 'text':
      return {
        status: 200,
        contentType: TEXT,
        body: selected(store, params, false, (sel) => textChunks(sel, params)),
      };
    case 'json':
      return {
        status: 200,
        contentType: 'application/json',
        body: selected(store, params, false, (sel) => jsonStatsChunks(sel, params)),
      };
    case 'prometheus':
      return {
        status: 200,
        contentType: 'text/plain; version=0.0.4; charset=UTF-8',
        body: selected(store, params, true, (sel) =>
          prometheusChunks(sel, tags, params.textReadouts, params.names ?? names, undefined, buckets),
        ),
      };
    case 'html':
      return { status: 200, contentType: HTML, body: renderHtml(selectStats(store, params), params) };
    case 'active-html':
      return { status: 200, contentType: HTML, body: renderActiveHtml(params) };
  }
}

/** What `/stats?format=json` prints with no other parameter, as data. */
export function statsData(store: StatsStore): { stats: unknown[] } {
  const parsed = parseStatsParams(new URLSearchParams(), 'json');
  if (!parsed.ok) throw new Error(parsed.response.body);
  return jsonStatsData(selectStats(store, parsed.params), parsed.params);
}

/** `/stats` as one string (see `streamStats`). */
export function renderStats(
  store: StatsStore,
  tags: TagProducer,
  query: URLSearchParams,
  preset?: StatsFormat,
): Rendered {
  const out = streamStats(store, tags, query, preset);
  return { ...out, body: bodyText(out.body) };
}
