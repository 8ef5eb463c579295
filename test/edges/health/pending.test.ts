import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as net from 'node:net';
import { test } from 'node:test';
import {
  bootstrapLoaded,
  clusterUpdated,
  type HostSpec,
  hostsSet,
  type RawCluster,
} from '../../../events/index.js';
import { healthFlags } from '../../../reducers/settings/health.js';
import type { HostState } from '../../../reducers/state.js';
import { Store } from '../../../src/control/store.js';
import { newUpstreamHost } from '../../../src/upstream/host.js';
import { groupByPriority, priorityLoads } from '../../../src/upstream/lb/priority.js';
import { cleanupsAfterAll } from '../../helpers/cleanups.js';
import { hostSpec } from '../../helpers/upstream.js';
import { checkedCluster, fastCheck, startHarness, waitFor } from './helpers.js';

const cleanups = cleanupsAfterAll();

function spec(port: number): HostSpec {
  return hostSpec(`127.0.0.1:${port}`);
}

function member(port: number, verdicts: Partial<HostState>) {
  return newUpstreamHost({ ...spec(port), failedActiveHc: false, failedOutlierCheck: false, ...verdicts });
}

test('excluded members (waiting for their first check) leave the panic and load counts, yet panic may still pick them', () => {
  const healthy = member(1, {});
  const waiting = [2, 3].map((p) => member(p, { failedActiveHc: true, pendingActiveHc: true }));
  // Counted, one healthy member of three would be 33 %: panic at 50.
  const loads = priorityLoads(groupByPriority([healthy, ...waiting]), 50);
  assert.deepEqual(loads.panic, [false], 'one healthy of one counted member');
  assert.deepEqual(loads.healthyLoad, [100]);
  assert.equal(loads.levels[0]?.excluded, 2);
  const onlyWaiting = priorityLoads(groupByPriority(waiting), 50);
  assert.deepEqual(onlyWaiting.panic, [true]);
  assert.equal(
    onlyWaiting.levels[0]?.hosts.length,
    2,
    'panic picks among all members, the excluded ones too',
  );
});

test('ignore_new_hosts_until_first_hc: a member added later is excluded until its first check, even a failing one', async () => {
  const server = http.createServer((_req, res) => res.writeHead(200).end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.address() as AddressInfo).port;
  const other = port === 65535 ? port - 1 : port + 1;
  const h = startHarness([
    checkedCluster('svc', [port], {
      type: 'STRICT_DNS',
      common_lb_config: { update_merge_window: '0s', ignore_new_hosts_until_first_hc: true },
      health_checks: [fastCheck({ http_health_check: { path: '/' } })],
    }),
  ]);
  cleanups.push(() => h.close());
  await h.edges.firstRound;
  assert.equal(h.host('svc', port)?.pendingActiveHc, undefined, 'members known at start are not excluded');
  h.store.dispatch(hostsSet({ cluster: 'svc', hosts: [spec(port), spec(other)], versionInfo: '' }), 'test');
  const added = h.host('svc', other);
  assert.equal(added?.pendingActiveHc, true);
  assert.equal(added?.failedActiveHc, true);
  // Nothing listens on `other`: its first check fails, which changes no verdict but ends the exclusion.
  await waitFor(
    'first check of the new member',
    () => h.host('svc', other)?.pendingActiveHc === undefined,
    2000,
  );
  assert.equal(h.host('svc', other)?.failedActiveHc, true);
});

test('members of a checked cluster start failing their checks; a config update that drops the checks clears that verdict', () => {
  const store = new Store();
  cleanups.push(() => store.close());
  const config = checkedCluster('svc', [1, 2], { health_checks: [fastCheck({ tcp_health_check: {} })] });
  store.dispatch(
    bootstrapLoaded({
      bootstrap: { static_resources: { clusters: [config] } },
      options: {},
      version: 't',
      sources: [],
    }),
    'test',
  );
  assert.deepEqual(
    store.state.clusters.svc?.hosts.map((h) => h.failedActiveHc),
    [true, true],
  );
  const { health_checks: _dropped, ...unchecked } = config;
  store.dispatch(clusterUpdated({ cluster: unchecked as RawCluster, versionInfo: 'v2' }), 'test');
  assert.deepEqual(
    store.state.clusters.svc?.hosts.map((h) => h.failedActiveHc),
    [false, false],
  );
});

test('a member discovery drops stays while it passes its checks (/pending_dynamic_removal) and leaves when it fails one; drain_connections_on_host_removal lets it go at once', async () => {
  const server = net.createServer((socket) => socket.on('error', () => {}));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const gone = port === 1 ? 2 : 1;
  const check = { health_checks: [fastCheck({ tcp_health_check: {} }, { unhealthy_threshold: 1 })] };
  const h = startHarness([
    checkedCluster('keep', [port], { type: 'STRICT_DNS', ...check }),
    checkedCluster('drain', [port], {
      type: 'STRICT_DNS',
      drain_connections_on_host_removal: true,
      ...check,
    }),
  ]);
  cleanups.push(() => h.close());
  await waitFor(
    'both healthy',
    () => h.host('keep', port)?.failedActiveHc === false && h.host('drain', port)?.failedActiveHc === false,
  );
  for (const cluster of ['keep', 'drain'])
    h.store.dispatch(hostsSet({ cluster, hosts: [spec(gone)], versionInfo: '' }), 'test');
  assert.equal(h.host('drain', port), undefined, 'drained at once');
  assert.equal(h.host('keep', port)?.pendingDynamicRemoval, true, 'kept while it passes');
  assert.equal(healthFlags(h.host('keep', port) as HostState), '/pending_dynamic_removal');
  await new Promise((r) => setTimeout(r, 200));
  assert.ok(h.host('keep', port), 'still there after several passing checks');
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await waitFor('removed once it fails', () => h.host('keep', port) === undefined, 2000);
  assert.deepEqual(
    h.store.state.clusters.keep?.hosts.map((x) => x.port),
    [gone],
  );
});
