/**
 * Where the edges of a server start: the parts that watch the world (files, DNS, timers, the
 * event loop, later health checks and xDS) and turn what they see into events or figures.
 * Everything else only reads snapshots and the context's facilities. Each edge gets the
 * narrow part of the context it needs and registers its own stop with `onShutdown`.
 */

import type { ServerContext } from '../context-core.js';
import { flushAccessLogsAtExit } from '../dataplane/access-log/file-sink.js';
import { reportPeerFaults } from '../dataplane/peer-faults.js';
import { collectWorkerStats } from '../dataplane/workers/collect.js';
import { bindLoggingToStore } from '../logging/store-binding.js';
import { startContentionSampler } from './contention-sampler.js';
import { startDnsDiscovery } from './dns/discovery.js';
import { startMetricsServices } from './metrics-service.js';
import { type HealthEdges, startHealthEdges } from './health/index.js';
import { logLifecycle } from './lifecycle-log.js';
import { startOverloadManager } from './overload/monitor.js';
import { startShrinkHeap } from './overload/shrink-heap.js';
import { loadDiskRuntimeLayers } from './runtime-disk.js';
import { reopenAccessLogsOnSignal } from './signals.js';
import { startXds, type XdsClient } from './xds/client.js';
import { startLoadReporting } from './xds/lrs/reporter.js';

/**
 * The edges the admin shows the result of: the disk runtime layers (read once, before the
 * admin listens, so `/runtime` never shows them missing) and, with
 * `--enable-mutex-tracing`, the event-loop sampler behind `/contention`.
 */
export async function startAdminInputs(ctx: ServerContext): Promise<void> {
  await loadDiskRuntimeLayers(ctx);
  if (ctx.contention) ctx.onShutdown(startContentionSampler(ctx.contention));
}

/** The running edges the rest of start-up talks to; every other edge only dispatches events. */
export interface Edges {
  /**
   * Active health checks and outlier detection (`health/*` events), once per server: the
   * data plane reports request outcomes to it (workers through the primary).
   */
  readonly health: HealthEdges;
  /** xDS subscriptions: the server goes LIVE once `initialized` resolves. */
  readonly xds: XdsClient;
}

/**
 * Starts every edge of the primary process, in order, once the bootstrap is in the store.
 * Data-plane workers start none: they fold the primary's events, so hosts are resolved,
 * hosts checked and files read once.
 */
export async function startEdges(ctx: ServerContext): Promise<Edges> {
  // The store becomes the authority on log levels (`POST /logging`, replays).
  const logLevels = bindLoggingToStore(ctx.log, ctx.store);
  ctx.onShutdown(() => {
    logLevels.unsubscribe();
    ctx.log.close();
  });
  logLifecycle(ctx);
  reportPeerFaults(ctx);
  // Access log files: SIGUSR1 reopens them (rotation); the process's exit flushes them.
  ctx.onShutdown(reopenAccessLogsOnSignal());
  ctx.onShutdown(flushAccessLogsAtExit());
  ctx.statsRuntime.start(async (flush) => (await collectWorkerStats(ctx, 1000, flush)).stats);
  // The metrics service sinks: each flush's stats on a gRPC stream to the bootstrap's server.
  startMetricsServices(ctx);
  await startAdminInputs(ctx);
  // STRICT_DNS / LOGICAL_DNS resolution: `endpoints/hosts-*` events (source `dns`) that the
  // cluster managers of every thread follow.
  const dns = startDnsDiscovery(ctx);
  ctx.onShutdown(() => dns.close());
  // Active health checks and outlier detection: `health/*` events.
  const health = startHealthEdges(ctx);
  ctx.onShutdown(() => health.close());
  // The overload manager: `server/overload-action-changed` events the data plane acts on.
  const overload = startOverloadManager(ctx);
  if (overload) ctx.onShutdown(overload);
  const shrinkHeap = startShrinkHeap(ctx);
  if (shrinkHeap) ctx.onShutdown(shrinkHeap);
  // xDS subscriptions (CDS, EDS, LDS, RDS): cluster, endpoint, listener and route events.
  const xds = await startXds(ctx);
  // Load reports to the server of cluster_manager.load_stats_config (LRS), from every thread's counts.
  startLoadReporting(ctx);
  // A later edge starts here, with its own stop, and is returned only if start-up talks to it.
  return { health, xds };
}
