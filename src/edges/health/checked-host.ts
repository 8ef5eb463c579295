import { activeHealthChanged } from '../../../events/index.js';
import type { ClusterEntry, HostState } from '../../../reducers/index.js';
import { clusterStatName } from '../../../reducers/settings/cluster.js';
import type { LastHealthCheck } from '../../../views/clusters/figures.js';
import { compiledCluster } from '../../config/cluster.js';
import { secretsOf } from '../../config/secrets.js';
import { connectOptionsOf } from '../../dataplane/pool/connect-options.js';
import { type CheckContext, intervalBounds } from './check-context.js';
import type { CheckResult } from './probe.js';
import { createProbe } from './probes.js';
import { type HealthCheckCounters, HealthSession } from './session.js';

/** What a host knows of its cluster: its name and config, and how to recount its gauges. */
export interface HostsCluster {
  readonly name: string;
  readonly config: ClusterEntry['config'];
  recount(): void;
}

const random = (): number => Math.floor(Math.random() * 0x7fffffff);

/**
 * One member of a checked cluster: a session per `health_checks` entry, and the verdict last
 * sent (healthy when every session says so, degraded when one of those says so too). A
 * change of verdict is a `health/active-changed` event.
 */
export class CheckedHost {
  readonly sessions: HealthSession[] = [];
  healthy: boolean;
  degraded: boolean;
  /** Not an event: a check every second per host would flood the event log with no change. */
  last: LastHealthCheck | undefined = undefined;
  /**
   * A member excluded until its first check (`ignore_new_hosts_until_first_hc`) is told
   * that check's verdict even when it changes nothing, so the fold lets it back in.
   */
  private excluded: boolean;
  /** First checks the first round still waits for from this member. */
  private awaited: number;

  constructor(
    private readonly cluster: HostsCluster,
    private readonly host: HostState,
    private readonly shared: CheckContext,
  ) {
    const { stats, store } = shared.deps;
    const checks = compiledCluster(cluster.config).checks;
    const statName = clusterStatName(cluster.config);
    const counters = countersOf(shared, statName);
    const verifyCluster = stats.counter(`cluster.${statName}.health_check.verify_cluster`);
    const scope = stats.scope(`cluster.${statName}`);
    this.healthy = !host.failedActiveHc;
    this.degraded = host.degradedActiveHc === true;
    this.awaited = shared.firstRound.expect(checks.length);
    this.excluded = host.pendingActiveHc === true;
    for (const check of checks) {
      const probe = createProbe(
        {
          ip: host.ip,
          port: host.port,
          pipe: host.pipe === true,
          cluster: cluster.name,
          connect: connectOptionsOf(cluster.config, secretsOf(store.state)),
          scope,
          onVerifyCluster: () => verifyCluster.inc(),
        },
        check.checker,
        check.reuseConnection,
      );
      this.sessions.push(
        new HealthSession(check, probe, this.healthy, {
          hadTraffic: () => shared.hadTraffic(cluster.name),
          random,
          intervalBounds: () => intervalBounds(store.state),
          counters,
          onChange: () => this.onChange(),
          onChecked: (result) => this.onChecked(result),
          log: check.eventLogPath
            ? shared.eventLogs.writerFor(check.eventLogPath, check.checker.kind, cluster.name, host)
            : undefined,
        }),
      );
    }
  }

  start(): void {
    for (const session of this.sessions) session.start();
  }

  stop(): void {
    for (const session of this.sessions) session.stop();
  }

  failPassively(): void {
    for (const session of this.sessions) session.failPassively();
  }

  private onChange(): void {
    const healthy = this.sessions.every((s) => s.isHealthy);
    const degraded = healthy && this.sessions.some((s) => s.isDegraded);
    if (healthy === this.healthy && degraded === this.degraded) return;
    this.healthy = healthy;
    this.degraded = degraded;
    this.cluster.recount();
    this.report();
  }

  private onChecked(result: CheckResult): void {
    this.last = { at: this.shared.deps.store.scheduler.now(), result };
    if (this.excluded) this.report();
    if (this.awaited === 0) return;
    this.awaited--;
    this.shared.firstRound.checked();
  }

  private report(): void {
    this.excluded = false;
    const { healthy, degraded } = this;
    this.shared.deps.store.dispatch(
      activeHealthChanged({
        cluster: this.cluster.name,
        address: this.host.address,
        healthy,
        ...(degraded ? { degraded } : {}),
      }),
      'health',
    );
  }
}

/** `cluster.<stat name>.health_check.*`, the counters every session of a host bumps. */
function countersOf(shared: CheckContext, statName: string): HealthCheckCounters {
  const scope = shared.deps.stats.scope(`cluster.${statName}.health_check`);
  return {
    attempt: scope.counter('attempt'),
    success: scope.counter('success'),
    failure: scope.counter('failure'),
    networkFailure: scope.counter('network_failure'),
    passiveFailure: scope.counter('passive_failure'),
  };
}
