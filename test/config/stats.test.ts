/**
 * The bootstrap's stats settings compile once per bootstrap (`compiledStatsSettings`): the
 * stats edge read `stats_flush_interval`, `stats_config` and the hystrix sink of `stats_sinks`
 * from the bootstrap's JSON itself; now it reads this value, the sink found by any spelling of
 * its name the loader resolves.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { compiledStatsSettings, DEFAULT_FLUSH_INTERVAL_MS } from '../../src/config/stats.js';
import { bootstrapOf, errorsOf, loadYaml } from '../helpers/bootstrap.js';

test('a bootstrap without stats fields gets the defaults', () => {
  assert.deepEqual(compiledStatsSettings(undefined), {
    flushIntervalMs: DEFAULT_FLUSH_INTERVAL_MS,
    flushOnAdmin: false,
    tags: {},
    versionOverride: undefined,
    hystrix: null,
    sinks: [],
    buckets: [],
  });
});

test('the stats fields of a loaded bootstrap, the hystrix sink by every name, once per bootstrap', () => {
  for (const name of ['envoy.stat_sinks.hystrix', 'envoy.hystrix', 'proxy.stat_sinks.hystrix']) {
    const bootstrap = bootstrapOf(
      loadYaml(`
stats_flush_interval: 2s
stats_server_version_override: 7
stats_config: { use_all_default_tags: false }
stats_sinks:
  - name: ${name}
    typed_config:
      "@type": type.googleapis.com/envoy.config.metrics.v2.HystrixSink
      num_buckets: 4
`),
    ) as unknown as JsonObject;
    const settings = compiledStatsSettings(bootstrap);
    assert.deepEqual(
      settings,
      {
        flushIntervalMs: 2000,
        flushOnAdmin: false,
        tags: { use_all_default_tags: false },
        versionOverride: 7,
        hystrix: { numBuckets: 4 },
        sinks: [],
        buckets: [],
      },
      name,
    );
    assert.equal(compiledStatsSettings(bootstrap), settings, 'the same value for the same bootstrap');
  }
});

test('malformed stats sinks give no hystrix sink; num_buckets is at least 1', () => {
  assert.equal(compiledStatsSettings({ stats_sinks: 'no list' }).hystrix, null);
  assert.equal(compiledStatsSettings({ stats_sinks: [null, 3, { typed_config: [] }] }).hystrix, null);
  const sink = (buckets: number): JsonObject => ({
    stats_sinks: [
      {
        typed_config: {
          '@type': 'type.googleapis.com/envoy.config.metrics.v2.HystrixSink',
          num_buckets: buckets,
        },
      },
    ],
  });
  assert.deepEqual(compiledStatsSettings(sink(0)).hystrix, { numBuckets: 1 });
  assert.equal(compiledStatsSettings({ stats_flush_on_admin: true }).flushOnAdmin, true);
});

test("stats_flush_interval outside the reference's [1ms, 300s) is refused naming the field", () => {
  // Root cause: the interval went to setInterval unchecked, and Node runs a delay past 2^31-1 ms
  // (`3000000s`) every millisecond: the flush, and any stats sink's send, ran 1,000 times a
  // second. The reference's proto bounds it to [1ms, 300s).
  for (const bad of ['300s', '3000000s', '0.000500s', '0s']) {
    assert.deepEqual(errorsOf(loadYaml(`stats_flush_interval: ${bad}`)), [
      `--config-yaml: stats_flush_interval: must be at least 0.001s and less than 300s, got ${bad}`,
    ]);
  }
  for (const good of ['0.001s', '299.999s', '5s'])
    assert.equal(bootstrapOf(loadYaml(`stats_flush_interval: ${good}`)).stats_flush_interval, good);
});
