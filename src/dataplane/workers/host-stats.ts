import type { State } from '../../../reducers/index.js';
import type { ClusterManager } from '../../upstream/cluster-manager.js';
import type { HostStatsByCluster } from './stats-merge.js';

/**
 * One data-plane thread's per-host figures (`/clusters`, LRS): its hosts of the snapshot's
 * clusters and those its balancers created. With workers the main thread's are summed with
 * each worker's answer (`collectWorkerHosts`).
 */
export function threadHostStats(state: State, manager: ClusterManager<unknown>): HostStatsByCluster {
  const out: HostStatsByCluster = {};
  for (const name of Object.keys(state.clusters)) {
    const runtime = manager.get(name);
    if (!runtime) continue;
    const hosts = [...runtime.hosts, ...manager.createdHosts(name)];
    out[name] = Object.fromEntries(hosts.map((h) => [h.address, { ...h.stats }]));
  }
  return out;
}
