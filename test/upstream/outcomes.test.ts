import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  failsHealthChecksAtOnce,
  IMMEDIATE_HEALTH_CHECK_FAIL,
  type OutcomeBatch,
  relayOutcomes,
} from '../../src/upstream/outcomes.js';

const detected = { name: 'od', settings: { hasOutlierDetection: true } };
const checked = { name: 'hc', settings: { hasOutlierDetection: false } };

test('a worker relays outcomes in one message per event-loop turn; a cluster without outlier detection only its first one and immediate failures', async () => {
  const sent: OutcomeBatch[] = [];
  const relay = relayOutcomes((batch) => sent.push(batch));
  relay(detected, '10.0.0.1:80', 200);
  relay(checked, '10.0.0.2:80', 200);
  relay(detected, '10.0.0.1:80', 503);
  relay(checked, '10.0.0.2:80', 500);
  relay(checked, '10.0.0.2:80', IMMEDIATE_HEALTH_CHECK_FAIL);
  assert.equal(sent.length, 0, 'nothing before the turn ends');
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(sent, [
    [
      ['od', '10.0.0.1:80', 200],
      ['hc', '10.0.0.2:80', 200],
      ['od', '10.0.0.1:80', 503],
      ['hc', '10.0.0.2:80', IMMEDIATE_HEALTH_CHECK_FAIL],
    ],
  ]);
  relay(checked, '10.0.0.2:80', 200);
  await new Promise((r) => setImmediate(r));
  assert.equal(sent.length, 1, 'the cluster was noted already: nothing more to send');
});

test('the immediate-fail header is found in any case, and only as a name', () => {
  assert.equal(
    failsHealthChecksAtOnce(['content-type', 'text/plain', 'X-Proxy-Immediate-Health-Check-Fail', 'true']),
    true,
  );
  assert.equal(failsHealthChecksAtOnce(['x-note', 'x-proxy-immediate-health-check-fail']), false);
  assert.equal(failsHealthChecksAtOnce([]), false);
});
