import assert from 'node:assert/strict';
import { test } from 'node:test';
import { activeHealthChanged } from '../../../events/index.js';
import { Store } from '../../../src/control/store.js';
import { createLoggers } from '../../../src/logging/loggers.js';
import { StatsStore } from '../../../src/stats/store.js';
import { createClusterManager } from '../../../src/upstream/cluster-manager.js';
import { loadClusters } from '../../helpers/upstream.js';
import { checkedCluster, waitFor } from './helpers.js';

test('ten health flaps inside one update_merge_window reach the balancer as one change', async () => {
  const store = new Store();
  const stats = new StatsStore();
  const log = createLoggers({ logLevel: 'critical' });
  const cluster = checkedCluster('svc', [1, 2, 3], { common_lb_config: { update_merge_window: '0.3s' } });
  loadClusters(store, [cluster]);
  const manager = await createClusterManager({ store, stats, log });
  const balancers = new Set<unknown>();
  const sub = store.state$.subscribe(() => balancers.add(manager.get('svc')?.lb));
  const flap = (healthy: boolean) =>
    store.dispatch(activeHealthChanged({ cluster: 'svc', address: '127.0.0.1:1', healthy }), 'test');
  const before = balancers.size;
  // The first update passes at once and opens the window.
  flap(false);
  assert.equal(balancers.size, before + 1);
  for (let i = 0; i < 10; i++) flap(i % 2 === 1);
  assert.equal(balancers.size, before + 1, 'held inside the window');
  await waitFor('the window closes', () => balancers.size === before + 2, 2000);
  await new Promise((r) => setTimeout(r, 400));
  assert.equal(balancers.size, before + 2, 'ten flaps, one balancer change');
  assert.equal(store.state.clusters.svc?.hosts[0]?.failedActiveHc, false, 'the last flap wins');
  assert.equal(store.mergeStats.merged, 1);
  sub.unsubscribe();
  manager.close();
  store.close();
  log.close();
});
