/**
 * The compile step of `stats_config`: its fields' table, and `histogram_bucket_settings`, the
 * bucket bounds of the histograms a string matcher picks by their stat names, which `/stats`'
 * bucket modes, Prometheus and the metrics service sink count against
 * (src/stats/buckets.ts). `--mode validate` and the stats edge run the same function.
 */
import type { JsonObject } from '../../events/config.js';
import { arrayOf, objectOf } from '../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable } from '../bootstrap/honoured.js';
import { attempt, type Report } from '../bootstrap/report.js';
import { compileStringMatcher, type StringTest } from './matchers.js';

/** One entry compiled: the stats it matches and their bounds, ascending (src/stats/buckets.ts reads them). */
export interface BucketSetting {
  matches: StringTest;
  buckets: number[];
}

const STATS_CONFIG_FIELDS: FieldTable = {
  // Tag extraction (src/stats/tags.ts), checked when the stats edge starts.
  ...acting('stats_tags', 'use_all_default_tags', 'histogram_bucket_settings'),
  // The reference leaves the stats it rejects uncreated to save memory; here every stat is
  // made and shown, so /stats lists more than the reference would.
  stats_matcher: 'advise',
};
// `bins` sizes the reference's per-thread histogram; the bins here grow as samples come.
const BUCKET_SETTINGS_FIELDS: FieldTable = { ...acting('match', 'buckets'), bins: 'advise' };

/** The field tables of this compile step, by the message name its findings use (docs/bootstrap.md lists them). */
export const FIELD_TABLES = {
  StatsConfig: STATS_CONFIG_FIELDS,
  HistogramBucketSettings: BUCKET_SETTINGS_FIELDS,
};

/** The bounds of one entry: above zero and each once, as the reference requires; ascending. */
function bounds(raw: JsonObject, at: string, report: Report): number[] {
  const out: number[] = [];
  for (const [j, value] of arrayOf(raw.buckets).entries()) {
    const bound = Number(value);
    if (!(bound > 0) || !Number.isFinite(bound))
      report.error(`${at}.buckets[${j}]`, `${String(value)} is not a bucket bound (a number above 0)`);
    else if (out.includes(bound)) report.error(`${at}.buckets[${j}]`, `${bound} is given twice`);
    else out.push(bound);
  }
  return out.sort((a, b) => a - b);
}

/** `stats_config` (at `path`) with its findings in `report`: the bucket rules, in order. */
export function compileStatsConfig(statsConfig: JsonObject, path: string, report: Report): BucketSetting[] {
  checkFields(statsConfig, path, report, STATS_CONFIG_FIELDS, 'StatsConfig');
  const rules: BucketSetting[] = [];
  for (const [i, entry] of arrayOf(statsConfig.histogram_bucket_settings).entries()) {
    const at = `${path}.histogram_bucket_settings[${i}]`;
    const raw = objectOf(entry);
    checkFields(raw, at, report, BUCKET_SETTINGS_FIELDS, 'HistogramBucketSettings');
    const buckets = bounds(raw, at, report);
    if (raw.match === undefined) {
      report.error(`${at}.match`, 'required field missing', 'missing');
      continue;
    }
    const matches = attempt(report, `${at}.match`, () =>
      compileStringMatcher(objectOf(raw.match), `${at}.match`),
    );
    if (matches) rules.push({ matches, buckets });
  }
  return rules;
}
