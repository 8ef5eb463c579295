import type { HostSpec, RawCluster } from '../../../events/index.js';
import type { ClusterEntry } from '../../../reducers/index.js';
import { type ClusterSettings, clusterSettings } from '../../../reducers/settings/cluster.js';
import { configuredEndpoints, hostKey, isIpLiteral } from '../../../reducers/settings/endpoints.js';
import { followClusters } from '../../control/follow-clusters.js';
import type { Core } from '../../core.js';
import type { Scope } from '../../stats/store.js';
import { createNameResolver, type LookupFamily, type NameResolver } from './resolve.js';

/** The discovery types this edge serves. */
export function isDnsCluster(settings: ClusterSettings): boolean {
  const type = settings.type.toUpperCase();
  return type === 'STRICT_DNS' || type === 'LOGICAL_DNS';
}

/**
 * Resolution of one DNS cluster config: every `dns_refresh_rate` (or the smallest record TTL
 * with `respect_dns_ttl`), each configured name is resolved; STRICT_DNS makes every address
 * a member, LOGICAL_DNS keeps the first address of the first name as its one member. A name
 * that fails keeps its previous addresses (`update_failure`).
 */
class DnsCluster {
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly resolver: NameResolver;
  private readonly targets: HostSpec[];
  /** Last successful addresses per target. */
  private readonly last: Array<string[] | undefined>;
  private readonly scope: Scope;

  constructor(
    private readonly ctx: DiscoveryDeps,
    readonly config: RawCluster,
    private readonly settings: ClusterSettings,
  ) {
    const endpoints = configuredEndpoints(config);
    this.targets = settings.type.toUpperCase() === 'LOGICAL_DNS' ? endpoints.slice(0, 1) : endpoints;
    this.last = this.targets.map(() => undefined);
    this.resolver = createNameResolver(settings.dnsResolvers);
    this.scope = ctx.stats.scope(`cluster.${settings.statName}`);
  }

  start(): void {
    void this.refresh();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.resolver.close();
  }

  private async refresh(): Promise<void> {
    const family = this.settings.dnsLookupFamily.toUpperCase() as LookupFamily;
    let minTtl: number | null = null;
    let anySuccess = false;
    await Promise.all(
      this.targets.map(async (target, i) => {
        this.scope.counter('update_attempt').inc();
        try {
          const resolved = await this.resolver.resolve(target.ip, family);
          this.scope.counter('update_success').inc();
          this.last[i] = resolved.addresses;
          anySuccess = true;
          if (resolved.ttlSeconds !== null) minTtl = Math.min(minTtl ?? Infinity, resolved.ttlSeconds);
        } catch (err) {
          this.scope.counter('update_failure').inc();
          this.ctx.log
            .get('upstream')
            .debug(
              { err, cluster: this.settings.name, name: target.ip },
              'DNS resolution failed, keeping hosts',
            );
        }
      }),
    );
    if (this.stopped) return;
    if (anySuccess) this.publish();
    const ttlMs = minTtl !== null && minTtl > 0 ? minTtl * 1000 : 0;
    const delay = this.settings.respectDnsTtl && ttlMs > 0 ? ttlMs : this.settings.dnsRefreshRateMs;
    this.timer = setTimeout(() => void this.refresh(), Math.max(1, delay));
    this.timer.unref();
  }

  private publish(): void {
    const logical = this.settings.type.toUpperCase() === 'LOGICAL_DNS';
    const hosts: HostSpec[] = [];
    const seen = new Set<string>();
    this.targets.forEach((target, i) => {
      const addresses = this.last[i] ?? [];
      for (const ip of logical ? addresses.slice(0, 1) : addresses) {
        const address = hostKey(ip, target.port);
        if (seen.has(address)) continue;
        seen.add(address);
        const hostname = isIpLiteral(target.ip) ? target.hostname : target.ip;
        hosts.push({ ...target, ip, address, hostname });
      }
    });
    if (hosts.length === 0) this.scope.counter('update_empty').inc();
    this.ctx.store.receiveHosts(
      { cluster: this.settings.name, hosts, versionInfo: '', config: this.config },
      'dns',
    );
  }
}

/** What discovery reads and writes: snapshots in, host events out, its counters and logs. */
export type DiscoveryDeps = Pick<Core, 'store' | 'stats' | 'log'>;

/**
 * Follows the snapshots and keeps one resolution loop per STRICT_DNS / LOGICAL_DNS cluster,
 * restarted when the cluster's config object changes and stopped when it goes away.
 * Results reach the store as `hostsSet` / `hostsUpdated` events (source `dns`).
 */
export function startDnsDiscovery(ctx: DiscoveryDeps): { close(): void } {
  const start = (entry: ClusterEntry): DnsCluster | undefined => {
    const settings = clusterSettings(entry.config);
    if (!isDnsCluster(settings)) return undefined;
    const cluster = new DnsCluster(ctx, entry.config, settings);
    cluster.start();
    return cluster;
  };
  const running = followClusters<DnsCluster | undefined>(ctx.store, {
    added: (_name, entry) => start(entry),
    changed(_name, entry, current) {
      // Its own host events change the entry, not the config: the loop goes on.
      if (current?.config === entry.config) return current;
      current?.stop();
      return start(entry);
    },
    removed: (_name, cluster) => cluster?.stop(),
  });
  return {
    close() {
      running.close();
      for (const cluster of running.values()) cluster?.stop();
    },
  };
}
