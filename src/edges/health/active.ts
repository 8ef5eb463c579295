import type { Subscription } from 'rxjs';
import { activeHealthChanged, type JsonObject } from '../../../events/index.js';
import type { ClusterEntry, HostState, State } from '../../../reducers/index.js';
import { runtimeValue } from '../../../reducers/runtime.js';
import { clusterStatName } from '../../../reducers/settings/cluster.js';
import type { LastHealthCheck } from '../../../views/clusters/figures.js';
import type { Store } from '../../control/store.js';
import { connectOptionsOf } from '../../dataplane/pool/connect-options.js';
import type { Loggers } from '../../logging/loggers.js';
import type { Gauge, StatsStore } from '../../stats/store.js';
import { secretsOf } from '../../tls/secrets.js';
import { type CheckerSettings, clusterHealth } from './config.js';
import { JsonLinesLog } from './event-log.js';
import { type CheckResult, createProbe } from './probes.js';
import { type HealthCheckCounters, HealthSession } from './session.js';

/** The active checkers of every cluster with `health_checks`. */
export interface ActiveHealthChecking {
  /** Resolves once every host present at start had its first check (the reference's cluster warming). */
  readonly firstRound: Promise<void>;
  /** The cluster carried traffic: its checks leave `no_traffic_interval` for good. */
  noteTraffic(cluster: string): void;
  /** An answer from `address` asked to fail it at once (`x-proxy-immediate-health-check-fail`). */
  failPassively(cluster: string, address: string): void;
  /** When `address` was last checked and how that check ended (a live figure of `/clusters`). */
  lastCheck(cluster: string, address: string): LastHealthCheck | undefined;
  close(): void;
}

/** What the health edges use of a server: the store they follow and dispatch to, and its stats. */
export interface HealthDeps {
  readonly store: Store;
  readonly stats: StatsStore;
  /** Where an edge reports what it cannot do (an event log it cannot write); none in unit tests. */
  readonly log?: Loggers;
}

/** One host of a checked cluster: a session per `health_checks` entry and the verdict last sent. */
interface CheckedHost {
  sessions: HealthSession[];
  healthy: boolean;
  degraded: boolean;
  /** Not an event: a check every second per host would flood the event log with no change. */
  last: LastHealthCheck | undefined;
}

interface CheckedCluster {
  config: ClusterEntry['config'];
  /** The members array last followed: an unchanged one needs no walk. */
  members: ClusterEntry['hosts'] | null;
  hosts: Map<string, CheckedHost>;
  healthyGauge: Gauge;
  degradedGauge: Gauge;
}

const random = (): number => Math.floor(Math.random() * 0x7fffffff);

/** The reference's `HealthCheckerType` of each checker, for the event log. */
const CHECKER_TYPE: Record<CheckerSettings['kind'], string> = { http: 'HTTP', tcp: 'TCP', grpc: 'GRPC' };

/**
 * Starts the active health checkers (an edge: run once, in the process that owns the store;
 * workers learn every verdict from the events). Follows the snapshots: a cluster whose config
 * changed gets new checkers, members that come and go get and lose theirs. A verdict change
 * of a host (all of its checkers agreeing) is a `health/active-changed` event.
 */
export function startActiveHealthChecking(ctx: HealthDeps): ActiveHealthChecking {
  const clusters = new Map<string, CheckedCluster>();
  const trafficked = new Set<string>();
  /** Health check event logs by path: checkers of several clusters may share one file. */
  const eventLogs = new Map<string, JsonLinesLog>();
  const eventLogOf = (path: string): JsonLinesLog => {
    let log = eventLogs.get(path);
    if (!log) {
      log = new JsonLinesLog(path, (err) =>
        ctx.log
          ?.get('upstream')
          .error({ err, path }, 'health check event log: writing failed, no more lines'),
      );
      eventLogs.set(path, log);
    }
    return log;
  };
  let warming = 0;
  let warmed: () => void = () => {};
  const firstRound = new Promise<void>((resolve) => {
    warmed = resolve;
  });
  let started = false;

  function counters(statName: string): HealthCheckCounters {
    const scope = ctx.stats.scope(`cluster.${statName}.health_check`);
    return {
      attempt: scope.counter('attempt'),
      success: scope.counter('success'),
      failure: scope.counter('failure'),
      networkFailure: scope.counter('network_failure'),
      passiveFailure: scope.counter('passive_failure'),
    };
  }

  /** `health_check.min_interval` / `max_interval` from the runtime, each when it holds an integer. */
  function intervalBounds(): { min: number; max: number } {
    const read = (key: string, fallback: number) => {
      const raw = runtimeValue(ctx.store.state, key)?.trim();
      return raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : fallback;
    };
    return {
      min: read('health_check.min_interval', 0),
      max: read('health_check.max_interval', Number.MAX_SAFE_INTEGER),
    };
  }

  function recountHealthy(cluster: CheckedCluster): void {
    let healthy = 0;
    let degraded = 0;
    for (const host of cluster.hosts.values()) {
      if (host.degraded) degraded++;
      else if (host.healthy) healthy++;
    }
    cluster.healthyGauge.set(healthy);
    cluster.degradedGauge.set(degraded);
  }

  function addHost(name: string, cluster: CheckedCluster, host: HostState, warm: boolean): void {
    const checks = clusterHealth(cluster.config).checks;
    const statName = clusterStatName(cluster.config);
    const stats = counters(statName);
    const verifyCluster = ctx.stats.counter(`cluster.${statName}.health_check.verify_cluster`);
    const scope = ctx.stats.scope(`cluster.${statName}`);
    const checked: CheckedHost = {
      sessions: [],
      healthy: !host.failedActiveHc,
      degraded: host.degradedActiveHc === true,
      last: undefined,
    };
    let pendingFirst = warm ? checks.length : 0;
    warming += pendingFirst;
    // A member excluded until its first check (`ignore_new_hosts_until_first_hc`) is told
    // that check's verdict even when it changes nothing, so the fold lets it back in.
    let excluded = host.pendingActiveHc === true;
    const report = () => {
      excluded = false;
      const { healthy, degraded } = checked;
      ctx.store.dispatch(
        activeHealthChanged({
          cluster: name,
          address: host.address,
          healthy,
          ...(degraded ? { degraded } : {}),
        }),
        'health',
      );
    };
    const onChange = () => {
      const healthy = checked.sessions.every((s) => s.isHealthy);
      const degraded = healthy && checked.sessions.some((s) => s.isDegraded);
      if (healthy === checked.healthy && degraded === checked.degraded) return;
      checked.healthy = healthy;
      checked.degraded = degraded;
      recountHealthy(cluster);
      report();
    };
    const onChecked = (result: CheckResult) => {
      checked.last = { at: ctx.store.scheduler.now(), result };
      if (excluded) report();
      if (pendingFirst === 0) return;
      pendingFirst--;
      if (--warming === 0) warmed();
    };
    for (const check of checks) {
      const probe = createProbe(
        {
          ip: host.ip,
          port: host.port,
          cluster: name,
          connect: connectOptionsOf(cluster.config, secretsOf(ctx.store.state)),
          scope,
          onVerifyCluster: () => verifyCluster.inc(),
        },
        check.checker,
        check.reuseConnection,
      );
      checked.sessions.push(
        new HealthSession(check, probe, checked.healthy, {
          hadTraffic: () => trafficked.has(name),
          random,
          intervalBounds,
          counters: stats,
          onChange,
          onChecked,
          log: check.eventLogPath
            ? eventLine(eventLogOf(check.eventLogPath), check.checker.kind, name, host)
            : undefined,
        }),
      );
    }
    cluster.hosts.set(host.address, checked);
    for (const session of checked.sessions) session.start();
  }

  /** Writes one `HealthCheckEvent` line about `host` of cluster `name`. */
  function eventLine(
    log: JsonLinesLog,
    kind: CheckerSettings['kind'],
    name: string,
    host: HostState,
  ): (event: JsonObject) => void {
    const about = {
      health_checker_type: CHECKER_TYPE[kind],
      host: { socket_address: { protocol: 'TCP', address: host.ip, port_value: host.port } },
      cluster_name: name,
    };
    return (event) => log.write({ ...about, ...event, timestamp: new Date().toISOString() });
  }

  function stopHost(checked: CheckedHost): void {
    for (const session of checked.sessions) session.stop();
  }

  function stopCluster(cluster: CheckedCluster): void {
    for (const host of cluster.hosts.values()) stopHost(host);
    cluster.hosts.clear();
  }

  function follow(state: State): void {
    for (const [name, entry] of Object.entries(state.clusters)) {
      let cluster = clusters.get(name);
      if (cluster && cluster.config !== entry.config) {
        stopCluster(cluster);
        clusters.delete(name);
        cluster = undefined;
      }
      if (clusterHealth(entry.config).checks.length === 0) continue;
      if (!cluster) {
        const statName = clusterStatName(entry.config);
        cluster = {
          config: entry.config,
          members: null,
          hosts: new Map(),
          healthyGauge: ctx.stats.gauge(`cluster.${statName}.health_check.healthy`, 'NeverImport'),
          degradedGauge: ctx.stats.gauge(`cluster.${statName}.health_check.degraded`, 'NeverImport'),
        };
        clusters.set(name, cluster);
      }
      if (cluster.members === entry.hosts) continue;
      cluster.members = entry.hosts;
      const present = new Set<string>();
      for (const host of entry.hosts) {
        present.add(host.address);
        if (!cluster.hosts.has(host.address)) addHost(name, cluster, host, !started);
      }
      for (const [address, checked] of cluster.hosts) {
        if (present.has(address)) continue;
        stopHost(checked);
        cluster.hosts.delete(address);
      }
      recountHealthy(cluster);
    }
    for (const [name, cluster] of clusters) {
      if (state.clusters[name] !== undefined) continue;
      stopCluster(cluster);
      clusters.delete(name);
    }
  }

  const subscription: Subscription = ctx.store.state$.subscribe((state) => {
    try {
      follow(state);
    } catch (err) {
      // One bad snapshot must not end health checking: the next one is followed again.
      ctx.log?.get('upstream').error({ err }, 'health checks: a snapshot could not be followed');
    }
  });
  started = true;
  if (warming === 0) warmed();
  return {
    firstRound,
    noteTraffic: (cluster) => trafficked.add(cluster),
    failPassively(cluster, address) {
      for (const session of clusters.get(cluster)?.hosts.get(address)?.sessions ?? [])
        session.failPassively();
    },
    lastCheck: (cluster, address) => clusters.get(cluster)?.hosts.get(address)?.last,
    close() {
      subscription.unsubscribe();
      for (const cluster of clusters.values()) stopCluster(cluster);
      clusters.clear();
      for (const log of eventLogs.values()) log.close();
      warmed();
    },
  };
}
