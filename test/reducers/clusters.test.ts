/**
 * The per-host times the clusters page shows (the last change of the active verdict and the
 * last ejection) are folded from the stamp of the health events, so `?at=` and a replay
 * show them as they were.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  activeHealthChanged,
  bootstrapLoaded,
  type Envelope,
  hostsSet,
  outlierChanged,
  type ProxyEvent,
  updateRejected,
} from '../../events/index.js';
import { MAX_REJECTED } from '../../reducers/clusters.js';
import { foldAll, initialState, type State } from '../../reducers/index.js';
import { bootstrapWith, cluster } from '../helpers/event-log.js';

const boot = bootstrapLoaded({
  bootstrap: bootstrapWith([cluster('api', ['10.0.0.1:80', '10.0.0.2:80'])]),
  options: {},
  version: 't',
  sources: [],
});

/** Folds `events` after the bootstrap, the n-th stamped at `at[n]`. */
function fold(events: Array<[number, ProxyEvent]>): State {
  const envs: Envelope<ProxyEvent>[] = [boot, ...events.map(([, e]) => e)].map((event, i) => ({
    seq: i + 1,
    at: i === 0 ? 1000 : events[i - 1]![0],
    source: 'test',
    event,
  }));
  return foldAll(initialState, envs);
}

const host = (state: State, address: string) => state.clusters.api!.hosts.find((h) => h.address === address)!;

test('a change of the active verdict records when it happened; a verdict told again does not', () => {
  const state = fold([
    [2000, activeHealthChanged({ cluster: 'api', address: '10.0.0.1:80', healthy: false })],
    [3000, activeHealthChanged({ cluster: 'api', address: '10.0.0.1:80', healthy: false })],
    [4000, activeHealthChanged({ cluster: 'api', address: '10.0.0.2:80', healthy: true, degraded: true })],
  ]);
  assert.equal(host(state, '10.0.0.1:80').activeHcChangedAt, 2000);
  assert.equal(host(state, '10.0.0.1:80').failedActiveHc, true);
  // Healthy before and after, but now degraded: a change of verdict.
  assert.equal(host(state, '10.0.0.2:80').activeHcChangedAt, 4000);
  assert.equal(
    host(
      fold([[2000, activeHealthChanged({ cluster: 'api', address: '10.0.0.2:80', healthy: true })]]),
      '10.0.0.2:80',
    ).activeHcChangedAt,
    undefined,
  );
});

test('an ejection records when and why, and its end when the host comes back', () => {
  const ejected = fold([
    [
      2000,
      outlierChanged({ cluster: 'api', address: '10.0.0.1:80', ejected: true, reason: 'consecutive_5xx' }),
    ],
  ]);
  assert.deepEqual(host(ejected, '10.0.0.1:80').lastEjection, { at: 2000, reason: 'consecutive_5xx' });
  assert.equal(host(ejected, '10.0.0.2:80').lastEjection, undefined);
  const back = fold([
    [
      2000,
      outlierChanged({ cluster: 'api', address: '10.0.0.1:80', ejected: true, reason: 'consecutive_5xx' }),
    ],
    [
      9000,
      outlierChanged({
        cluster: 'api',
        address: '10.0.0.1:80',
        ejected: false,
        reason: 'ejection time elapsed',
      }),
    ],
  ]);
  assert.deepEqual(host(back, '10.0.0.1:80').lastEjection, {
    at: 2000,
    reason: 'consecutive_5xx',
    endedAt: 9000,
  });
  assert.equal(host(back, '10.0.0.1:80').failedOutlierCheck, false);
  // Ejected again: the new ejection replaces the ended one.
  const again = foldAll(back, [
    {
      seq: 4,
      at: 12_000,
      source: 'test',
      event: outlierChanged({
        cluster: 'api',
        address: '10.0.0.1:80',
        ejected: true,
        reason: 'success_rate',
      }),
    },
  ]);
  assert.deepEqual(host(again, '10.0.0.1:80').lastEjection, { at: 12_000, reason: 'success_rate' });
});

test('the times stay with a member whose record discovery rewrites', () => {
  const before = fold([
    [2000, activeHealthChanged({ cluster: 'api', address: '10.0.0.1:80', healthy: false })],
    [
      3000,
      outlierChanged({ cluster: 'api', address: '10.0.0.1:80', ejected: true, reason: 'consecutive_5xx' }),
    ],
  ]);
  const members = before.clusters.api!.hosts.map(
    ({ address, ip, port, hostname, priority, locality, metadata, edsHealth }) => ({
      address,
      ip,
      port,
      hostname,
      weight: 9,
      priority,
      locality,
      metadata,
      edsHealth,
    }),
  );
  const after = foldAll(before, [
    {
      seq: 4,
      at: 5000,
      source: 'test',
      event: hostsSet({ cluster: 'api', hosts: members, versionInfo: '' }),
    },
  ]);
  assert.equal(host(after, '10.0.0.1:80').weight, 9);
  assert.equal(host(after, '10.0.0.1:80').activeHcChangedAt, 2000);
  assert.deepEqual(host(after, '10.0.0.1:80').lastEjection, { at: 3000, reason: 'consecutive_5xx' });
});

test('keeps the newest rejections only: a server sending new bad versions for ever cannot grow the state', () => {
  const rejections: Array<[number, ProxyEvent]> = Array.from({ length: MAX_REJECTED + 50 }, (_, i) => [
    2000 + i,
    updateRejected({
      resource: 'cluster',
      name: `bad-${i}`,
      versionInfo: `v${i}`,
      errors: ['name: required'],
    }),
  ]);
  const state = fold(rejections);
  assert.equal(state.rejected.length, MAX_REJECTED);
  assert.equal(state.rejected[0]?.versionInfo, 'v50');
  assert.equal(state.rejected.at(-1)?.versionInfo, `v${MAX_REJECTED + 49}`);
});
