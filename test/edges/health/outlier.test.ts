import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { type Envelope, type JsonObject, type ProxyEvent, runtimeModified } from '../../../events/index.js';
import { checkedCluster, type HealthHarness, startHarness, waitFor } from './helpers.js';

const harnesses: HealthHarness[] = [];
after(() => {
  for (const h of harnesses) h.close();
});

/** Ports nothing listens on: the detector only sees the outcomes the test feeds it. */
const PORTS = [41001, 41002, 41003, 41004, 41005];

function harness(
  outlier: JsonObject,
  ports = PORTS,
  extra: JsonObject = {},
): HealthHarness & { events: Array<ProxyEvent> } {
  const h = startHarness([checkedCluster('svc', ports, { outlier_detection: outlier })], extra);
  harnesses.push(h);
  const events: ProxyEvent[] = [];
  h.store.ingested$.subscribe((env: Envelope<ProxyEvent>) => {
    if (env.event.type === 'health/outlier-changed') events.push(env.event);
  });
  return Object.assign(h, { events });
}

const feed = (h: HealthHarness, port: number, status: number, times: number) => {
  for (let i = 0; i < times; i++) h.edges.onOutcome({ name: 'svc' }, `127.0.0.1:${port}`, status);
};

test('consecutive 5xx ejects at once; the host returns after base_ejection_time, then twice as long after a second ejection', async () => {
  const h = harness({
    consecutive_5xx: 3,
    interval: '0.05s',
    base_ejection_time: '0.2s',
    max_ejection_percent: 100,
  });
  const [a] = PORTS as [number];
  feed(h, a, 500, 2);
  feed(h, a, 200, 1);
  feed(h, a, 500, 2);
  assert.equal(h.host('svc', a)?.failedOutlierCheck, false, 'a success in between resets the count');
  feed(h, a, 500, 1);
  await waitFor('ejected', () => h.host('svc', a)?.failedOutlierCheck === true, 500);
  assert.deepEqual(h.events[0], {
    type: 'health/outlier-changed',
    cluster: 'svc',
    address: `127.0.0.1:${a}`,
    ejected: true,
    reason: 'consecutive_5xx',
  });
  assert.equal(h.counter('cluster.svc.outlier_detection.ejections_enforced_consecutive_5xx'), 1);
  assert.equal(h.counter('cluster.svc.outlier_detection.ejections_detected_consecutive_5xx'), 1);
  assert.equal(h.stats.gauges.get('cluster.svc.outlier_detection.ejections_active')?.value, 1);
  const first = await waitFor('back after 0.2 s', () => h.host('svc', a)?.failedOutlierCheck === false, 1000);
  assert.ok(first >= 150, `returned after ${first} ms`);
  assert.equal(h.stats.gauges.get('cluster.svc.outlier_detection.ejections_active')?.value, 0);
  feed(h, a, 503, 3);
  await waitFor('ejected again', () => h.host('svc', a)?.failedOutlierCheck === true, 500);
  const second = await waitFor(
    'back after 0.4 s',
    () => h.host('svc', a)?.failedOutlierCheck === false,
    1500,
  );
  assert.ok(second >= 350, `second ejection lasted ${second} ms (base time x 2)`);
  assert.equal(h.counter('cluster.svc.outlier_detection.ejections_enforced_total'), 2);
});

test('gateway failures are detected but enforcing_consecutive_gateway_failure defaults to 0; local-origin failures count as 503 without the split', async () => {
  const h = harness({ consecutive_5xx: 10, consecutive_gateway_failure: 2, interval: '0.05s' });
  const [a] = PORTS as [number];
  feed(h, a, 0, 2);
  assert.equal(h.counter('cluster.svc.outlier_detection.ejections_detected_consecutive_gateway_failure'), 1);
  assert.equal(h.counter('cluster.svc.outlier_detection.ejections_enforced_consecutive_gateway_failure'), 0);
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(h.host('svc', a)?.failedOutlierCheck, false);
});

test('split_external_local_origin_errors: consecutive local-origin failures eject; 5xx answers do not count toward them', async () => {
  const h = harness({
    split_external_local_origin_errors: true,
    consecutive_local_origin_failure: 3,
    consecutive_5xx: 100,
    interval: '1s',
  });
  const [a, b] = PORTS as [number, number];
  feed(h, b, 503, 5);
  feed(h, a, 0, 2);
  feed(h, a, 503, 1);
  feed(h, a, 0, 2);
  assert.equal(
    h.host('svc', a)?.failedOutlierCheck,
    false,
    'an answer (even a 503) resets the local-origin count',
  );
  feed(h, a, 0, 1);
  await waitFor('ejected', () => h.host('svc', a)?.failedOutlierCheck === true, 500);
  const last = h.events.at(-1);
  assert.equal(
    last?.type === 'health/outlier-changed' ? last.reason : '',
    'consecutive_local_origin_failure',
  );
  assert.equal(h.host('svc', b)?.failedOutlierCheck, false);
});

test('max_ejection_percent: one host may always be ejected, the next one overflows', async () => {
  const h = harness({ consecutive_5xx: 1, interval: '1s', max_ejection_percent: 10 }, PORTS.slice(0, 3));
  const [a, b] = PORTS as [number, number];
  feed(h, a, 500, 1);
  feed(h, b, 500, 1);
  await waitFor('a ejected', () => h.host('svc', a)?.failedOutlierCheck === true, 500);
  assert.equal(h.host('svc', b)?.failedOutlierCheck, false);
  assert.equal(h.counter('cluster.svc.outlier_detection.ejections_overflow'), 1);
});

test('success rate: average and threshold over the hosts with enough volume; the outlier below mean - 1.9 stdev is ejected', async () => {
  const h = harness({
    interval: '0.2s',
    success_rate_request_volume: 10,
    consecutive_5xx: 1000,
    max_ejection_percent: 100,
  });
  assert.deepEqual(h.edges.figures.outlier?.('svc'), {
    successRateAverage: -1,
    successRateEjectionThreshold: -1,
    localOriginSuccessRateAverage: -1,
    localOriginSuccessRateEjectionThreshold: -1,
  });
  const [a, b, c, d, e] = PORTS as [number, number, number, number, number];
  for (const port of [a, b, c, d]) feed(h, port, 200, 10);
  feed(h, e, 200, 5);
  feed(h, e, 500, 5);
  await waitFor('figures', () => (h.edges.figures.outlier?.('svc')?.successRateAverage ?? -1) >= 0, 1000);
  const figures = h.edges.figures.outlier?.('svc');
  // Rates 100, 100, 100, 100, 50: mean 90, stdev 20, threshold 90 - 1.9 x 20 = 52.
  assert.equal(figures?.successRateAverage, 90);
  assert.ok(Math.abs((figures?.successRateEjectionThreshold ?? 0) - 52) < 1e-9);
  assert.equal(h.edges.figures.hostSuccessRate?.('svc', `127.0.0.1:${a}`)?.successRate, 100);
  assert.equal(h.edges.figures.hostSuccessRate?.('svc', `127.0.0.1:${e}`)?.successRate, 50);
  await waitFor('e ejected', () => h.host('svc', e)?.failedOutlierCheck === true, 500);
  assert.equal(h.counter('cluster.svc.outlier_detection.ejections_enforced_success_rate'), 1);
  // The next interval had no requests: back to -1.
  await waitFor('no data again', () => h.edges.figures.outlier?.('svc')?.successRateAverage === -1, 1000);
  assert.equal(h.edges.figures.hostSuccessRate?.('svc', `127.0.0.1:${a}`)?.successRate, -1);
});

test('failure percentage ejects at failure_percentage_threshold when enforced', async () => {
  const h = harness({
    interval: '0.2s',
    failure_percentage_request_volume: 10,
    failure_percentage_threshold: 60,
    enforcing_failure_percentage: 100,
    enforcing_success_rate: 0,
    consecutive_5xx: 1000,
    max_ejection_percent: 100,
  });
  const [a, b] = PORTS as [number, number];
  for (const port of PORTS) if (port !== a && port !== b) feed(h, port, 200, 10);
  feed(h, a, 500, 6);
  feed(h, a, 200, 4);
  feed(h, b, 500, 5);
  feed(h, b, 200, 5);
  await waitFor('a ejected', () => h.host('svc', a)?.failedOutlierCheck === true, 1000);
  assert.equal(h.host('svc', b)?.failedOutlierCheck, false, '50 % is below the 60 % threshold');
  assert.equal(h.counter('cluster.svc.outlier_detection.ejections_enforced_failure_percentage'), 1);
});

test('runtime key outlier_detection.consecutive_5xx overrides the config', async () => {
  const h = harness({ consecutive_5xx: 50, interval: '1s', max_ejection_percent: 100 });
  h.store.dispatch(runtimeModified({ values: { 'outlier_detection.consecutive_5xx': '2' } }), 'test');
  const [a] = PORTS as [number];
  feed(h, a, 500, 2);
  await waitFor('ejected after 2', () => h.host('svc', a)?.failedOutlierCheck === true, 500);
});

test('cluster_manager.outlier_detection.event_log_path: one JSON line per ejection and return', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'outlier-log-'));
  const path = join(dir, 'outlier.log');
  try {
    const h = harness(
      { consecutive_5xx: 2, interval: '0.05s', base_ejection_time: '0.1s', max_ejection_percent: 100 },
      PORTS,
      {
        cluster_manager: { outlier_detection: { event_log_path: path } },
      },
    );
    const [a] = PORTS as [number];
    feed(h, a, 503, 2);
    await waitFor('back', () => h.events.length === 2, 1000);
    h.close();
    await waitFor(
      'two lines',
      () => readFileSync(path, 'utf8').split('\n').filter(Boolean).length === 2,
      1000,
    );
    const [eject, uneject] = readFileSync(path, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(eject.type, 'CONSECUTIVE_5XX');
    assert.equal(eject.action, 'EJECT');
    assert.equal(eject.cluster_name, 'svc');
    assert.equal(eject.upstream_url, `127.0.0.1:${a}`);
    assert.equal(eject.num_ejections, 1);
    assert.equal(eject.enforced, true);
    assert.deepEqual(eject.eject_consecutive_event, {});
    assert.ok(!Number.isNaN(Date.parse(eject.timestamp)));
    assert.equal(uneject.action, 'UNEJECT');
    assert.equal(uneject.secs_since_last_action, '0');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
