import type { State } from '../../reducers/index.js';
import { firstExpiry, loadedContexts } from '../config/tls-loaded.js';
import { memoryUsage } from '../memory-usage.js';
import type { Counter, Gauge, Histogram, StatsStore } from './store.js';

/** `ServerInfo.State` enum values, which `server.state` carries. */
const STATE_VALUE: Record<string, number> = { LIVE: 0, DRAINING: 1, PRE_INITIALIZING: 2, INITIALIZING: 3 };

/** The gauge of stat names looked up by string, in every thread (`/stats/recentlookups`). */
export const RECENT_LOOKUPS_GAUGE = 'server.stats_recent_lookups';

/** No TLS context reports expiry yet: the reference's "no certificates" value (INT32_MAX). */
export const NO_CERT_DAYS = 2147483647;

/** What the server gauges need besides the snapshot. */
export interface ServerFacts {
  concurrency: number;
  hotRestartEpoch: number;
  /** The `server.version` value: first 6 hex digits of the build SHA, or the override. */
  version: number;
  now(): number;
}

/** `server.version`: `stats_server_version_override`, else the first 6 hex digits of the SHA. */
export function versionStat(buildVersion: string, override: number | undefined): number {
  if (override !== undefined) return override;
  const sha = /^[0-9a-f]{6}/i.exec(buildVersion);
  return sha ? Number.parseInt(sha[0], 16) : 0;
}

/**
 * The server, listener manager and runtime stats, and the cluster manager's merge-window
 * and warming ones (the cluster manager keeps the rest). Snapshot-derived ones
 * change in `apply(prev, next)`; process gauges (uptime, memory, connections) in `refresh()`.
 */
/**
 * What the server stats read of the event store (src/control/store.ts): the snapshot, and the
 * merge window's tallies. Named here, not imported, so the stats model does not reach up to
 * the store that counts into it.
 */
export interface SnapshotSource {
  readonly state: State;
  readonly mergeStats: Readonly<{ merged: number; cancelled: number; outOfWindow: number }>;
}

export class ServerStats {
  private readonly server;
  private readonly cm;
  private readonly lm;
  private readonly runtime;
  private readonly initTime: Histogram;
  private readonly merge = { merged: 0, cancelled: 0, outOfWindow: 0 };
  private connectionGauges: Gauge[] = [];
  private connectionGeneration = -1;
  /** When the first loaded certificate expires (ms since the epoch); null: no certificate. */
  private firstCertExpiry: number | null = null;

  constructor(
    private readonly stats: StatsStore,
    private readonly store: SnapshotSource,
    private readonly facts: ServerFacts,
  ) {
    const s = stats.scope('server');
    const g = (name: string): Gauge => s.gauge(name, 'NeverImport');
    const c = (name: string): Counter => s.counter(name);
    this.server = {
      live: g('live'),
      state: g('state'),
      uptime: s.gauge('uptime'),
      concurrency: g('concurrency'),
      version: g('version'),
      memoryAllocated: s.gauge('memory_allocated'),
      memoryHeapSize: s.gauge('memory_heap_size'),
      memoryPhysicalSize: s.gauge('memory_physical_size'),
      totalConnections: s.gauge('total_connections'),
      parentConnections: s.gauge('parent_connections'),
      daysUntilFirstCertExpiring: s.gauge('days_until_first_cert_expiring'),
      hotRestartEpoch: g('hot_restart_epoch'),
      statsRecentLookups: stats.gauge(RECENT_LOOKUPS_GAUGE, 'NeverImport'),
      staticUnknownFields: c('static_unknown_fields'),
      dynamicUnknownFields: c('dynamic_unknown_fields'),
      debugAssertionFailures: c('debug_assertion_failures'),
    };
    this.initTime = s.histogram('initialization_time_ms');
    const cm = stats.scope('cluster_manager');
    // active_clusters and cluster_added/modified/removed belong to the cluster manager
    this.cm = {
      warmingClusters: cm.gauge('warming_clusters', 'NeverImport'),
      updatedViaMerge: cm.counter('cluster_updated_via_merge'),
      mergeCancelled: cm.counter('update_merge_cancelled'),
      outOfWindow: cm.counter('update_out_of_merge_window'),
    };
    const lm = stats.scope('listener_manager');
    this.lm = {
      added: lm.counter('listener_added'),
      modified: lm.counter('listener_modified'),
      removed: lm.counter('listener_removed'),
      stopped: lm.counter('listener_stopped'),
      createSuccess: lm.counter('listener_create_success'),
      createFailure: lm.counter('listener_create_failure'),
      inPlaceUpdated: lm.counter('listener_in_place_updated'),
      active: lm.gauge('total_listeners_active', 'NeverImport'),
      draining: lm.gauge('total_listeners_draining', 'NeverImport'),
      warming: lm.gauge('total_listeners_warming', 'NeverImport'),
      filterChainsDraining: lm.gauge('total_filter_chains_draining', 'NeverImport'),
      workersStarted: lm.gauge('workers_started', 'NeverImport'),
    };
    const rt = stats.scope('runtime');
    this.runtime = {
      loadSuccess: rt.counter('load_success'),
      loadError: rt.counter('load_error'),
      deprecatedFeatureUse: rt.counter('deprecated_feature_use'),
      numKeys: rt.gauge('num_keys', 'NeverImport'),
      numLayers: rt.gauge('num_layers', 'NeverImport'),
      adminOverridesActive: rt.gauge('admin_overrides_active', 'NeverImport'),
    };
    this.server.concurrency.set(facts.concurrency);
    this.server.hotRestartEpoch.set(facts.hotRestartEpoch);
    this.server.version.set(facts.version);
    this.server.daysUntilFirstCertExpiring.set(NO_CERT_DAYS);
  }

  /** Updates the snapshot-derived stats for the move from `prev` to `next`. */
  apply(prev: State | null, next: State): void {
    const srv = this.server;
    srv.state.set(STATE_VALUE[next.server.state] ?? 0);
    srv.live.set(next.server.state === 'LIVE' ? 1 : 0);
    if (next.server.state === 'LIVE' && prev?.server.state !== 'LIVE' && !this.initTime.used) {
      this.initTime.record(Math.max(0, next.at - next.server.startedAt));
      this.lm.workersStarted.set(1);
    }
    this.cm.warmingClusters.set(0);
    if (prev?.listeners !== next.listeners) this.applyListeners(prev?.listeners ?? {}, next.listeners);
    if (prev?.runtime !== next.runtime) this.applyRuntime(next);
    if (prev?.clusters !== next.clusters || prev?.listeners !== next.listeners) {
      this.firstCertExpiry = firstExpiry(loadedContexts(next).contexts);
      this.applyCertExpiry();
    }
    this.applyMergeWindow();
  }

  /** `server.days_until_first_cert_expiring`: whole days left on the first certificate to expire. */
  private applyCertExpiry(): void {
    const first = this.firstCertExpiry;
    this.server.daysUntilFirstCertExpiring.set(
      first === null ? NO_CERT_DAYS : Math.max(0, Math.floor((first - this.facts.now()) / 86_400_000)),
    );
  }

  private applyListeners(prev: State['listeners'], next: State['listeners']): void {
    const counts = { active: 0, draining: 0, pending: 0 };
    for (const [name, entry] of Object.entries(next)) {
      const before = prev[name];
      if (!before) this.lm.added.inc();
      else if (before.config !== entry.config) this.lm.modified.inc();
      if (entry.state !== before?.state) {
        if (entry.state === 'active') this.lm.createSuccess.inc();
        else if (entry.state === 'failed') this.lm.createFailure.inc();
        else if (entry.state === 'stopped') this.lm.stopped.inc();
      }
      if (entry.state === 'active' || entry.state === 'draining' || entry.state === 'pending') {
        counts[entry.state] += 1;
      }
    }
    for (const name of Object.keys(prev)) if (!(name in next)) this.lm.removed.inc();
    this.lm.active.set(counts.active);
    this.lm.draining.set(counts.draining);
    this.lm.warming.set(counts.pending);
  }

  private applyRuntime(next: State): void {
    const keys = new Set<string>();
    let adminOverrides = 0;
    for (const layer of next.runtime.layers) {
      for (const key of Object.keys(layer.values)) keys.add(key);
      if (layer.kind === 'admin') adminOverrides += Object.keys(layer.values).length;
    }
    this.runtime.loadSuccess.inc();
    this.runtime.numKeys.set(keys.size);
    this.runtime.numLayers.set(next.runtime.layers.length);
    this.runtime.adminOverridesActive.set(adminOverrides > 0 ? 1 : 0);
  }

  /** The merge window keeps its own tallies; the counters follow them. */
  private applyMergeWindow(): void {
    const m = this.store.mergeStats;
    this.cm.updatedViaMerge.add(m.merged - this.merge.merged);
    this.cm.mergeCancelled.add(m.cancelled - this.merge.cancelled);
    this.cm.outOfWindow.add(m.outOfWindow - this.merge.outOfWindow);
    Object.assign(this.merge, m);
  }

  /** Process gauges: uptime, memory, connections, recent lookups. */
  refresh(): void {
    const srv = this.server;
    const state = this.store.state;
    srv.uptime.set(Math.max(0, Math.floor((this.facts.now() - state.server.startedAt) / 1000)));
    const mem = memoryUsage();
    srv.memoryAllocated.set(mem.heapUsed);
    srv.memoryHeapSize.set(mem.heapTotal);
    srv.memoryPhysicalSize.set(mem.rss);
    srv.statsRecentLookups.set(this.stats.recentLookups.total);
    let connections = 0;
    for (const g of this.listenerConnectionGauges()) connections += g.value;
    srv.totalConnections.set(connections);
    this.applyCertExpiry();
    this.applyMergeWindow();
  }

  /** `listener.<address>.downstream_cx_active` of data-plane listeners (not the admin's, not per worker). */
  private listenerConnectionGauges(): Gauge[] {
    if (this.connectionGeneration !== this.stats.generation) {
      this.connectionGeneration = this.stats.generation;
      this.connectionGauges = [];
      for (const [name, g] of this.stats.gauges) {
        if (
          name.startsWith('listener.') &&
          name.endsWith('.downstream_cx_active') &&
          !name.startsWith('listener.admin.') &&
          !name.includes('.worker_')
        ) {
          this.connectionGauges.push(g);
        }
      }
    }
    return this.connectionGauges;
  }
}
