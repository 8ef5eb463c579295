/** Pieces of the health tests: a store holding one cluster, health edges over it, and waits. */
import { bootstrapLoaded, type JsonObject } from '../../../events/index.js';
import type { HostState } from '../../../reducers/state.js';
import { Store } from '../../../src/control/store.js';
import { StatsStore } from '../../../src/stats/store.js';
import { type HealthEdges, startHealthEdges } from '../../../src/edges/health/index.js';

/** A STATIC cluster of 127.0.0.1 ports with no merge window, so every verdict shows at once. */
export function checkedCluster(name: string, ports: number[], extra: JsonObject = {}): JsonObject {
  return {
    name,
    connect_timeout: '1s',
    common_lb_config: { update_merge_window: '0s' },
    load_assignment: {
      cluster_name: name,
      endpoints: [
        {
          lb_endpoints: ports.map((port) => ({
            endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: port } } },
          })),
        },
      ],
    },
    ...extra,
  };
}

/** Check timings short enough for tests; `no_traffic_interval` too, since no traffic flows. */
export function fastCheck(checker: JsonObject, extra: JsonObject = {}): JsonObject {
  return {
    timeout: '0.2s',
    interval: '0.05s',
    no_traffic_interval: '0.05s',
    unhealthy_threshold: 2,
    healthy_threshold: 2,
    ...checker,
    ...extra,
  };
}

export interface HealthHarness {
  store: Store;
  stats: StatsStore;
  edges: HealthEdges;
  host(cluster: string, port: number): HostState | undefined;
  counter(name: string): number;
  close(): void;
}

/** A store that folded a bootstrap of `clusters` (and `extra` fields), and the health edges following it. */
export function startHarness(clusters: JsonObject[], extra: JsonObject = {}): HealthHarness {
  const store = new Store();
  const stats = new StatsStore();
  store.dispatch(
    bootstrapLoaded({
      bootstrap: { static_resources: { clusters }, ...extra },
      options: {},
      version: 'test',
      sources: [],
    }),
    'test',
  );
  const edges = startHealthEdges({ store, stats });
  return {
    store,
    stats,
    edges,
    host: (cluster, port) => store.state.clusters[cluster]?.hosts.find((h) => h.port === port),
    counter: (name) => stats.counters.get(name)?.value ?? 0,
    close() {
      edges.close();
      store.close();
    },
  };
}

/** Polls `condition` every 10 ms; fails with `what` after `timeoutMs`. */
export async function waitFor(what: string, condition: () => boolean, timeoutMs = 3000): Promise<number> {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > timeoutMs)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return Date.now() - started;
}
