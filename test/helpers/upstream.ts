/** Builders for upstream tests: hosts, balancer inputs and a server context over a real store. */
import bunyan from 'bunyan';
import { bootstrapLoaded, type HostSpec, type JsonObject, type RawCluster } from '../../events/index.js';
import { clusterSettings } from '../../reducers/settings/cluster.js';
import type { HostState } from '../../reducers/state.js';
import { DEFAULT_OPTIONS } from '../../src/cli/parse.js';
import { createContext, type ServerContext } from '../../src/context.js';
import type { Store } from '../../src/control/store.js';
import type { Loggers } from '../../src/logging/loggers.js';
import { StatsStore } from '../../src/stats/store.js';
import { newUpstreamHost } from '../../src/upstream/host.js';
import type { BalancerInput } from '../../src/upstream/lb/input.js';
import { seededRandom } from '../../src/upstream/random.js';
import type { UpstreamHost } from '../../src/upstream/types.js';

/** A member spec for `ip:port` with the given overrides. */
export function hostSpec(address: string, overrides: Partial<HostSpec> = {}): HostSpec {
  const at = address.lastIndexOf(':');
  const ip = address.slice(0, at).replace(/^\[|\]$/g, '');
  const port = Number(address.slice(at + 1));
  return {
    address,
    ip,
    port,
    hostname: '',
    weight: 1,
    priority: 0,
    locality: { region: '', zone: '', sub_zone: '' },
    metadata: {},
    edsHealth: 'UNKNOWN',
    ...overrides,
  };
}

/** A data-plane host for `ip:port`; `failed` marks it as failing active health checks. */
export function upstreamHost(
  address: string,
  overrides: Partial<HostSpec> & { failed?: boolean; rqActive?: number } = {},
): UpstreamHost {
  const { failed = false, rqActive = 0, ...spec } = overrides;
  const state: HostState = { ...hostSpec(address, spec), failedActiveHc: failed, failedOutlierCheck: false };
  const host = newUpstreamHost(state);
  host.stats.rq_active = rqActive;
  return host;
}

/** `count` hosts 10.0.0.1:80, 10.0.0.2:80, ... */
export function hostRange(count: number, overrides: Parameters<typeof upstreamHost>[1] = {}): UpstreamHost[] {
  return Array.from({ length: count }, (_, i) =>
    upstreamHost(`10.0.${i >> 8}.${(i & 255) + 1}:80`, overrides),
  );
}

/** A balancer input over `hosts` for a cluster config (name `c` unless given), seeded randomness. */
export function balancerInput(
  hosts: UpstreamHost[],
  cluster: Partial<RawCluster> = {},
  overrides: Partial<BalancerInput> = {},
): BalancerInput & { stats: StatsStore } {
  const stats = new StatsStore();
  const settings = clusterSettings({ name: 'c', ...cluster } as RawCluster);
  return {
    hosts,
    settings,
    panicThreshold: settings.healthyPanicThreshold,
    random: seededRandom(42),
    memory: { seed: 0, rrIndexes: [] },
    scope: stats.scope('cluster.c'),
    stats,
    ...overrides,
  };
}

/** Tallies picks per host address. */
export function tally(pick: () => UpstreamHost | null, times: number): Map<string, number> {
  const counts = new Map<string, number>();
  for (let i = 0; i < times; i++) {
    const host = pick();
    const key = host?.address ?? 'none';
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/** A quiet server context around a fresh store and stats store. */
export function upstreamContext(): ServerContext {
  const root = bunyan.createLogger({ name: 'test', level: 'fatal' });
  const log = { root, get: () => root } as unknown as Loggers;
  return createContext({ options: DEFAULT_OPTIONS, log, history: false, exit: () => {} });
}

/** Loads a bootstrap of only these static clusters into `store`, as the server does at start. */
export function loadClusters(store: Store, clusters: JsonObject[], source = 'test'): void {
  store.dispatch(
    bootstrapLoaded({
      bootstrap: { static_resources: { clusters } },
      options: {},
      version: source,
      sources: [],
    }),
    source,
  );
}
