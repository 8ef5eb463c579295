/**
 * The stats of each subscription, named and counted as the reference does: `update_attempt`,
 * `update_success`, `update_rejected`, `update_failure`, `init_fetch_timeout`, the `version`
 * gauge (a hash of the accepted version, delta's `system_version_info` included) with
 * `version_text` (the version itself) and `update_time` (when it was accepted, ms since the
 * epoch), and RDS's `config_reload`.
 */
import { edsServiceName } from '../../../reducers/discovery.js';
import type { State } from '../../../reducers/index.js';
import { clusterStatName } from '../../../reducers/settings/cluster.js';
import { rdsNamesOf } from '../../config/rds-names.js';
import type { StatsStore } from '../../stats/store.js';
import type { ResourceKind } from './types.js';
import { versionHash } from './version-hash.js';

export type Outcome = 'update_success' | 'update_rejected' | 'update_failure' | null;

export class SubscriptionStats {
  constructor(
    private readonly stats: StatsStore,
    private readonly state: () => State,
  ) {}

  /**
   * The stat scopes of the subscriptions a watch of `names` serves: CDS and LDS have one each;
   * each EDS cluster and each HCM's route table is its own subscription in the reference, so a
   * response counts in the scope of every one it names.
   */
  scopes(kind: ResourceKind, names: ReadonlySet<string> | null): string[] {
    const state = this.state();
    switch (kind) {
      case 'cds':
        return ['cluster_manager.cds'];
      case 'lds':
        return ['listener_manager.lds'];
      case 'eds':
        return Object.values(state.clusters)
          .filter((entry) => entry.config.type === 'EDS' && names?.has(edsServiceName(entry.config)))
          .map((entry) => `cluster.${clusterStatName(entry.config)}`);
      case 'rds': {
        const scopes = new Set<string>();
        for (const listener of Object.values(state.listeners))
          for (const { name, statPrefix } of rdsNamesOf(listener.config))
            if (names?.has(name)) scopes.add(`http.${statPrefix}.rds.${name}`);
        return [...scopes];
      }
      case 'sds':
        return [...(names ?? [])].map((name) => `sds.${name}`);
    }
  }

  /**
   * One fetch in each subscription's scope: every outcome is an `update_attempt` too; an
   * accepted one sets the `version` gauge (and an RDS `config_reload`).
   */
  count(kind: ResourceKind, names: ReadonlySet<string> | null, outcome: Outcome, version = ''): void {
    for (const prefix of this.scopes(kind, names)) {
      const scope = this.stats.scope(prefix);
      scope.counter('update_attempt').inc();
      if (outcome) scope.counter(outcome).inc();
      if (outcome !== 'update_success') continue;
      scope.gauge('version', 'NeverImport').set(versionHash(version));
      scope.textReadout('version_text').set(version);
      scope.gauge('update_time', 'NeverImport').set(Date.now());
      if (kind === 'rds') scope.counter('config_reload').inc();
    }
  }

  /** An initial fetch timed out for `names` (null: the whole CDS or LDS subscription). */
  timedOut(kind: ResourceKind, names: ReadonlySet<string> | null): void {
    for (const prefix of this.scopes(kind, names))
      this.stats.scope(prefix).counter('init_fetch_timeout').inc();
  }
}
