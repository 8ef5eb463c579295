import type { State } from '../../reducers/index.js';
import { compiledStatsSettings, DEFAULT_FLUSH_INTERVAL_MS } from '../config/stats.js';
import type { Options } from '../options.js';
import { type Observable, pairwise, startWith } from '../rx.js';
import { VERSION } from '../version.js';
import { DEFAULT_HISTOGRAM_BUCKETS, HistogramBuckets } from './buckets.js';
import { HystrixStream } from './hystrix.js';
import { ServerStats, type SnapshotSource, versionStat } from './server-stats.js';
import { FlushLatch, type StatsSink } from './sinks/snapshot.js';
import { statsdSink } from './sinks/statsd.js';
import type { StatsStore } from './store.js';
import { type StatsConfig, TagConfigError, TagProducer } from './tags.js';

/**
 * The stats of every thread: the primary's own in-process, with workers the merged store
 * (`collectWorkerStats`). With `flush`, each worker closes its interval windows first.
 */
export type StatsSource = (flush: boolean) => Promise<StatsStore>;

/**
 * What the stats edge runs on: the part of a process's `Core` (src/core.ts) it reads, named
 * here so that the stats room, which every thread's context builds on, imports nothing above it.
 */
export interface StatsHost {
  readonly options: Pick<Options, 'statsTags' | 'concurrency' | 'restartEpoch'>;
  readonly store: SnapshotSource & {
    readonly state$: Observable<State>;
    readonly scheduler: { now(): number };
  };
  readonly stats: StatsStore;
  readonly log: { get(component: 'main'): { warn(message: string): void; error(message: string): void } };
  onShutdown(step: () => void): void;
}

/**
 * The stats edge of a process (`ctx.statsRuntime`): what the stats admin handlers read (tag
 * extraction, flush settings, the hystrix stream) and, once `start()` ran, the flush timer
 * (none with `stats_flush_on_admin`), server and manager stats kept from snapshots, counter
 * resets and recent-lookup switches applied from events. Before `start()` (an admin run
 * alone, as in handler tests) it has the default tag extractors and no timer.
 */
export class StatsRuntime {
  private tagProducer: TagProducer;
  private flushOnAdminSetting = false;
  private flushIntervalSetting = DEFAULT_FLUSH_INTERVAL_MS;
  private hystrixStream: HystrixStream | null = null;
  private bucketLayout = DEFAULT_HISTOGRAM_BUCKETS;
  /** The sinks that send at each flush, and the counters' values at the last one. */
  private sinks: StatsSink[] = [];
  private readonly latch = new FlushLatch();
  private server: ServerStats | null = null;
  private started = false;
  private source: StatsSource = async () => this.core.stats;
  /** A timer flush still waiting for the workers: the next tick is skipped, not queued. */
  private flushing = false;

  constructor(private readonly core: StatsHost) {
    this.tagProducer = new TagProducer({}, core.options.statsTags);
  }

  get tags(): TagProducer {
    return this.tagProducer;
  }

  get flushOnAdmin(): boolean {
    return this.flushOnAdminSetting;
  }

  get flushIntervalMs(): number {
    return this.flushIntervalSetting;
  }

  /** Each histogram's bucket bounds, from `stats_config.histogram_bucket_settings`. */
  get buckets(): HistogramBuckets {
    return this.bucketLayout;
  }

  /** Null when `stats_sinks` has no hystrix sink (the endpoint then answers 404). */
  get hystrix(): HystrixStream | null {
    return this.hystrixStream;
  }

  /**
   * The stats `/stats` renders, merged over the workers: after a flush with
   * `stats_flush_on_admin`, else after a gauge refresh.
   */
  forQuery(): Promise<StatsStore> {
    if (this.flushOnAdminSetting) return this.flush();
    this.server?.refresh();
    return this.source(false);
  }

  /**
   * The primary's flush closes its own interval windows, then the workers' with the one
   * merged read the sinks share, so each hystrix record counts every thread's traffic.
   */
  private async flush(): Promise<StatsStore> {
    this.server?.refresh();
    this.core.stats.flush();
    const stats = await this.source(true);
    this.hystrixStream?.onFlush(stats);
    if (this.sinks.length > 0) {
      const snapshot = this.latch.snapshot(stats);
      for (const sink of this.sinks) sink.flush(snapshot);
    }
    return stats;
  }

  private timerFlush(): void {
    if (this.flushing) return;
    this.flushing = true;
    this.flush()
      .catch((err: unknown) => this.core.log.get('main').warn(`stats flush: ${String(err)}`))
      .finally(() => {
        this.flushing = false;
      });
  }

  /**
   * A sink each flush sends to from now on, closed at shutdown: the statsd ones, made here,
   * and those an edge makes (the metrics service's gRPC stream, src/edges/metrics-service.ts).
   */
  addSink(sink: StatsSink): void {
    this.sinks.push(sink);
  }

  /**
   * Starts the edge from the bootstrap in the snapshot; `src/edges/start.ts` calls it once,
   * with the merged source when there are workers.
   */
  start(source?: StatsSource): this {
    if (this.started) return this;
    this.started = true;
    if (source) this.source = source;
    const { options, store, stats } = this.core;
    const bootstrap = store.state.bootstrap?.config;
    const cfg = compiledStatsSettings(bootstrap);
    try {
      this.tagProducer = new TagProducer(cfg.tags as StatsConfig, options.statsTags);
    } catch (err) {
      if (!(err instanceof TagConfigError)) throw err;
      this.core.log.get('main').error(`stats_config: ${err.message}; using the default tag extractors`);
    }
    this.flushOnAdminSetting = cfg.flushOnAdmin;
    this.bucketLayout = new HistogramBuckets(cfg.buckets);
    this.flushIntervalSetting = cfg.flushIntervalMs;
    const server = new ServerStats(stats, store, {
      concurrency: options.concurrency,
      hotRestartEpoch: options.restartEpoch,
      version: versionStat(VERSION, cfg.versionOverride),
      now: () => store.scheduler.now(),
    });
    this.server = server;
    const hystrix = cfg.hystrix
      ? new HystrixStream(() => store.state, cfg.flushIntervalMs, cfg.hystrix.numBuckets)
      : null;
    this.hystrixStream = hystrix;
    const log = this.core.log.get('main');
    for (const spec of cfg.sinks) {
      if (spec.kind !== 'statsd') continue;
      this.addSink(
        statsdSink(spec, {
          tags: this.tagProducer,
          state: () => store.state,
          counter: (name) => stats.counter(name),
          warn: (message) => log.warn(message),
        }),
      );
    }
    const subscription = store.state$
      .pipe(startWith(null), pairwise())
      .subscribe(([prev, next]) => next && applySnapshot(stats, server, prev, next));
    const timer = cfg.flushOnAdmin ? null : setInterval(() => this.timerFlush(), cfg.flushIntervalMs);
    timer?.unref();
    this.core.onShutdown(() => {
      if (timer) clearInterval(timer);
      subscription.unsubscribe();
      hystrix?.close();
      for (const sink of this.sinks) sink.close();
    });
    return this;
  }
}

/** Applies the stats side of a snapshot change: resets, recent lookups, server stats. */
function applySnapshot(stats: StatsStore, server: ServerStats, prev: State | null, next: State): void {
  applyStatsControl(stats, prev, next);
  server.apply(prev, next);
}

/**
 * The part of a snapshot change every thread applies to its own stats, the primary and
 * each data-plane worker alike: counter resets and the recent-lookup switches. `prev` is
 * null for the first snapshot, which can only switch lookups on.
 */
export function applyStatsControl(stats: StatsStore, prev: State | null, next: State): void {
  const before = prev?.stats;
  const now = next.stats;
  if (before && now.countersResetSeq !== before.countersResetSeq) stats.resetCounters();
  if (now.recentLookupsEnabled !== (before?.recentLookupsEnabled ?? false)) {
    if (now.recentLookupsEnabled) stats.recentLookups.enable();
    else stats.recentLookups.disable();
  }
  if (before && now.recentLookupsClearedSeq !== before.recentLookupsClearedSeq) stats.recentLookups.clear();
}
