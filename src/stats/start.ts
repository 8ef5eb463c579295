import { pairwise, startWith } from 'rxjs';
import type { JsonObject } from '../../events/index.js';
import type { State } from '../../reducers/index.js';
import { durationMs, numberOr, objectOf } from '../../reducers/settings/values.js';
import type { ServerContext } from '../server/context.js';
import { VERSION } from '../version.js';
import { HystrixStream, hystrixSinkConfig } from './hystrix.js';
import { ServerStats, versionStat } from './server-stats.js';
import type { StatsStore } from './store.js';
import { type StatsConfig, TagConfigError, TagProducer } from './tags.js';

/** Default `stats_flush_interval`. */
export const DEFAULT_FLUSH_INTERVAL_MS = 5000;

/** What the stats admin handlers need from the running stats edge. */
export interface StatsRuntime {
  tags: TagProducer;
  flushOnAdmin: boolean;
  flushIntervalMs: number;
  /** Null when `stats_sinks` has no hystrix sink (the endpoint then answers 404). */
  hystrix: HystrixStream | null;
  /** Run before rendering `/stats`: a flush with `stats_flush_on_admin`, else a gauge refresh. */
  beforeQuery(): void;
}

const runtimes = new WeakMap<StatsStore, StatsRuntime>();

/** The bootstrap fields that drive the stats edge. */
function statsBootstrap(bootstrap: JsonObject | undefined): {
  flushIntervalMs: number;
  flushOnAdmin: boolean;
  config: StatsConfig;
  versionOverride: number | undefined;
} {
  const b = bootstrap ?? {};
  const override = b.stats_server_version_override;
  return {
    flushIntervalMs: durationMs(b.stats_flush_interval, DEFAULT_FLUSH_INTERVAL_MS),
    flushOnAdmin: b.stats_flush_on_admin === true,
    config: objectOf(b.stats_config) as StatsConfig,
    versionOverride: override === undefined ? undefined : numberOr(override, 0),
  };
}

/**
 * The stats edge of a running server: tag extraction from `stats_config` and
 * `--stats-tag`, the flush timer (none with `stats_flush_on_admin`), server and manager
 * stats kept from snapshots, counter resets and recent-lookup switches applied from
 * events, and the hystrix stream when its sink is configured.
 */
export function startStats(ctx: ServerContext): StatsRuntime {
  const log = ctx.log.get('main');
  const bootstrap = ctx.store.state.bootstrap?.config;
  const cfg = statsBootstrap(bootstrap);
  let tags: TagProducer;
  try {
    tags = new TagProducer(cfg.config, ctx.options.statsTags);
  } catch (err) {
    if (!(err instanceof TagConfigError)) throw err;
    log.error(`stats_config: ${err.message}; using the default tag extractors`);
    tags = new TagProducer({}, ctx.options.statsTags);
  }
  const server = new ServerStats(ctx.stats, ctx.store, {
    concurrency: ctx.options.concurrency,
    hotRestartEpoch: ctx.options.restartEpoch,
    version: versionStat(VERSION, cfg.versionOverride),
    now: () => ctx.store.scheduler.now(),
  });
  const sink = hystrixSinkConfig(bootstrap);
  const hystrix = sink
    ? new HystrixStream(ctx.stats, () => ctx.store.state, cfg.flushIntervalMs, sink)
    : null;
  const stopHystrix = hystrix ? ctx.stats.onFlush(() => hystrix.onFlush()) : () => {};

  const flush = (): void => {
    server.refresh();
    ctx.stats.flush();
  };
  const subscription = ctx.store.state$
    .pipe(startWith(null), pairwise())
    .subscribe(([prev, next]) => next && applySnapshot(ctx.stats, server, prev, next));

  const timer = cfg.flushOnAdmin ? null : setInterval(flush, cfg.flushIntervalMs);
  timer?.unref();
  ctx.onShutdown(() => {
    if (timer) clearInterval(timer);
    subscription.unsubscribe();
    stopHystrix();
    hystrix?.close();
  });
  const runtime: StatsRuntime = {
    tags,
    flushOnAdmin: cfg.flushOnAdmin,
    flushIntervalMs: cfg.flushIntervalMs,
    hystrix,
    beforeQuery: () => (cfg.flushOnAdmin ? flush() : server.refresh()),
  };
  runtimes.set(ctx.stats, runtime);
  return runtime;
}

/** Applies the stats side of a snapshot change: resets, recent lookups, server stats. */
function applySnapshot(stats: StatsStore, server: ServerStats, prev: State | null, next: State): void {
  applyStatsControl(stats, prev, next);
  server.apply(prev, next);
}

/**
 * The part of a snapshot change every process applies to its own stats, the primary and
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

/**
 * The stats edge of `ctx`, or (before `startStats` ran, as in handler tests) one with the
 * default tag extractors and no timer.
 */
export function statsRuntimeOf(ctx: ServerContext): StatsRuntime {
  let runtime = runtimes.get(ctx.stats);
  if (!runtime) {
    runtime = {
      tags: new TagProducer({}, ctx.options?.statsTags ?? []),
      flushOnAdmin: false,
      flushIntervalMs: DEFAULT_FLUSH_INTERVAL_MS,
      hystrix: null,
      beforeQuery: () => {},
    };
    runtimes.set(ctx.stats, runtime);
  }
  return runtime;
}
