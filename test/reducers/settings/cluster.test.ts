import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clusterSettings } from '../../../reducers/settings/cluster.js';
import { durationMs } from '../../../reducers/settings/values.js';

test('an empty cluster gets every default of the spec', () => {
  const s = clusterSettings({ name: 'svc:1' });
  assert.equal(s.statName, 'svc_1');
  assert.equal(s.type, 'STATIC');
  assert.equal(s.lbPolicy, 'ROUND_ROBIN');
  assert.equal(s.perConnectionBufferLimitBytes, 1048576);
  assert.equal(s.dnsRefreshRateMs, 5000);
  assert.equal(s.cleanupIntervalMs, 5000);
  assert.equal(s.dnsLookupFamily, 'AUTO');
  assert.equal(s.protocolSelection, 'USE_CONFIGURED_PROTOCOL');
  assert.deepEqual(s.ringHash, { minimumRingSize: 1024, maximumRingSize: 8388608, hashFunction: 'XX_HASH' });
  assert.equal(s.leastRequestChoiceCount, 2);
  assert.equal(s.healthyPanicThreshold, 50);
  assert.equal(s.updateMergeWindowMs, 1000);
  assert.deepEqual(s.zoneAware, { routingEnabled: 100, minClusterSize: 6 });
  assert.deepEqual(s.thresholds.DEFAULT, {
    priority: 'DEFAULT',
    maxConnections: 1024,
    maxPendingRequests: 1024,
    maxRequests: 1024,
    maxRetries: 3,
  });
});

test('configured values win, percents truncate to whole percent, alt_stat_name names stats', () => {
  const s = clusterSettings({
    name: 'svc',
    alt_stat_name: 'alt:name',
    lb_policy: 'RING_HASH',
    ring_hash_lb_config: { minimum_ring_size: '2048', maximum_ring_size: 4096 },
    common_lb_config: { healthy_panic_threshold: { value: 33.9 }, update_merge_window: '0s' },
    circuit_breakers: { thresholds: [{ priority: 'HIGH', max_retries: 9 }] },
  });
  assert.equal(s.statName, 'alt_name');
  assert.equal(s.ringHash.minimumRingSize, 2048);
  assert.equal(s.ringHash.maximumRingSize, 4096);
  assert.equal(s.healthyPanicThreshold, 33);
  assert.equal(s.updateMergeWindowMs, 0);
  assert.equal(s.thresholds.HIGH.maxRetries, 9);
  assert.equal(s.thresholds.HIGH.maxConnections, 1024);
  assert.equal(s.thresholds.DEFAULT.maxRetries, 3);
});

test('settings are memoised by config identity', () => {
  const config = { name: 'x' };
  assert.equal(clusterSettings(config), clusterSettings(config));
});

test('durations parse proto3 JSON strings', () => {
  assert.equal(durationMs('0.25s', 0), 250);
  assert.equal(durationMs('1.500s', 0), 1500);
  assert.equal(durationMs('5s', 0), 5000);
  assert.equal(durationMs('0.000000001s', 0), 0.000001);
  assert.equal(durationMs(undefined, 42), 42);
  assert.equal(durationMs('bogus', 42), 42);
});
