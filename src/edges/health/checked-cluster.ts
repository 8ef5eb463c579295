import type { ClusterEntry, HostState } from '../../../reducers/index.js';
import { clusterStatName } from '../../../reducers/settings/cluster.js';
import type { Gauge } from '../../stats/store.js';
import type { CheckContext } from './check-context.js';
import { CheckedHost, type HostsCluster } from './checked-host.js';

/**
 * A cluster with `health_checks`, for as long as its config object stays: its checked
 * members by address, which come and go with the snapshot's, and the
 * `health_check.healthy` / `degraded` gauges.
 */
export class CheckedCluster implements HostsCluster {
  readonly hosts = new Map<string, CheckedHost>();
  /** The members array last followed: an unchanged one needs no walk. */
  private members: readonly HostState[] | null = null;
  private readonly healthyGauge: Gauge;
  private readonly degradedGauge: Gauge;

  constructor(
    readonly name: string,
    readonly config: ClusterEntry['config'],
    private readonly shared: CheckContext,
  ) {
    const statName = clusterStatName(config);
    this.healthyGauge = shared.deps.stats.gauge(`cluster.${statName}.health_check.healthy`, 'NeverImport');
    this.degradedGauge = shared.deps.stats.gauge(`cluster.${statName}.health_check.degraded`, 'NeverImport');
  }

  /** Checks the members the snapshot lists, and stops checking those it no longer does. */
  follow(members: readonly HostState[]): void {
    if (members === this.members) return;
    this.members = members;
    const present = new Set<string>();
    for (const host of members) {
      present.add(host.address);
      if (this.hosts.has(host.address)) continue;
      const checked = new CheckedHost(this, host, this.shared);
      // Listed before its first check, which may recount the gauges at once.
      this.hosts.set(host.address, checked);
      checked.start();
    }
    for (const [address, checked] of this.hosts) {
      if (present.has(address)) continue;
      checked.stop();
      this.hosts.delete(address);
    }
    this.recount();
  }

  recount(): void {
    let healthy = 0;
    let degraded = 0;
    for (const host of this.hosts.values()) {
      if (host.degraded) degraded++;
      else if (host.healthy) healthy++;
    }
    this.healthyGauge.set(healthy);
    this.degradedGauge.set(degraded);
  }

  stop(): void {
    for (const host of this.hosts.values()) host.stop();
    this.hosts.clear();
  }
}
