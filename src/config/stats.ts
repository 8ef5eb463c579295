/**
 * The bootstrap's stats settings, read once per bootstrap (by its identity) for the stats edge
 * (src/stats/start.ts): the flush interval and whether the admin flushes instead, the tag
 * extraction config, the server version override, the hystrix sink of `stats_sinks` and the
 * sinks that send (./stats-sinks.ts).
 */
import type { JsonObject } from '../../events/index.js';
import { arrayOf, durationMs, numberOr, objectOf } from '../../reducers/settings/values.js';
import { CONFIG_TYPE, configTypeOf } from '../bootstrap/extensions.js';
import { Report } from '../bootstrap/report.js';
import { type BucketSetting, compileStatsConfig } from './histogram-buckets.js';
import { type StatsSinkSpec, statsSinksOf } from './stats-sinks.js';

/** Default `stats_flush_interval`. */
export const DEFAULT_FLUSH_INTERVAL_MS = 5000;

export interface StatsSettings {
  /** `stats_flush_interval`. */
  flushIntervalMs: number;
  /** `stats_flush_on_admin`: the admin's reads flush; no timer does. */
  flushOnAdmin: boolean;
  /** `stats_config`, as the tag extractors take it (they check it: src/stats/tags.ts). */
  tags: JsonObject;
  /** `stats_server_version_override`. */
  versionOverride: number | undefined;
  /** The hystrix sink of `stats_sinks`: the flushes its rolling window counts; null: none. */
  hystrix: { numBuckets: number } | null;
  /** The sinks each flush sends to (statsd, DogStatsD, metrics service). */
  sinks: StatsSinkSpec[];
  /** `stats_config.histogram_bucket_settings`: the bucket bounds of the histograms each matches. */
  buckets: BucketSetting[];
}

const compiled = new WeakMap<JsonObject, StatsSettings>();
const NO_BOOTSTRAP: JsonObject = {};

/**
 * The hystrix sink of `stats_sinks`, or null. The loader resolved every spelling of its name
 * (or its `@type` alone) into `typed_config['@type']`, so the registry's type decides.
 */
function hystrixSink(bootstrap: JsonObject): StatsSettings['hystrix'] {
  for (const sink of arrayOf(bootstrap.stats_sinks)) {
    const s = objectOf(sink);
    if (configTypeOf(s) === CONFIG_TYPE.hystrixSink)
      return { numBuckets: Math.max(1, numberOr(objectOf(s.typed_config).num_buckets, 10)) };
  }
  return null;
}

/** The bucket settings of a `stats_config` already validated (none when it has findings). */
function bucketsOf(statsConfig: JsonObject): BucketSetting[] {
  const report = new Report('stats_config');
  const rules = compileStatsConfig(statsConfig, 'stats_config', report);
  return report.failed ? [] : rules;
}

/** The stats settings of `bootstrap` (none: the defaults). */
export function compiledStatsSettings(bootstrap: JsonObject | undefined): StatsSettings {
  const b = bootstrap ?? NO_BOOTSTRAP;
  const hit = compiled.get(b);
  if (hit) return hit;
  const override = b.stats_server_version_override;
  const settings: StatsSettings = {
    flushIntervalMs: durationMs(b.stats_flush_interval, DEFAULT_FLUSH_INTERVAL_MS),
    flushOnAdmin: b.stats_flush_on_admin === true,
    tags: objectOf(b.stats_config),
    versionOverride: override === undefined ? undefined : numberOr(override, 0),
    hystrix: hystrixSink(b),
    sinks: statsSinksOf(b),
    buckets: bucketsOf(objectOf(b.stats_config)),
  };
  compiled.set(b, settings);
  return settings;
}
