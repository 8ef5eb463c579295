/**
 * A data-plane worker process (`--concurrency N`, N > 1), forked by `WorkerPool`. It folds
 * the primary's events into its own store, runs listeners and the cluster runtimes over
 * it, and answers stats requests with a dump of its stats.
 */

import type { Envelope, ProxyEvent } from '../../../events/index.js';
import { durationMs } from '../../../reducers/settings/values.js';
import { Store } from '../../control/store.js';
import { createLoggers } from '../../logging/loggers.js';
import type { ServerContext } from '../../server/context.js';
import { StatsStore } from '../../stats/store.js';
import { type ClusterManager, createClusterManager } from '../../upstream/cluster-manager.js';
import { ListenerManager } from '../listeners/manager.js';
import { drainPools } from '../pool/index.js';
import { isPrimaryMessage, type PrimaryMessage, type WorkerMessage } from './messages.js';
import { dumpStats, type HostStatsByCluster } from './stats-merge.js';

function send(message: WorkerMessage): void {
  if (process.connected) process.send?.(message);
}

/**
 * A store whose `dispatch` goes to the primary: only the primary stamps events, and each
 * comes back to every worker as an envelope. The envelope returned here is provisional
 * (sequence number 0); the folded one arrives through `ingest`.
 */
class RelayStore extends Store {
  override dispatch(event: ProxyEvent, source: string): Envelope<ProxyEvent> {
    send({ kind: 'dispatch', event, source });
    return { seq: 0, at: this.scheduler.now(), source, event };
  }
}

let store: RelayStore | null = null;
let stats: StatsStore | null = null;
let clusters: ClusterManager | null = null;
let listeners: ListenerManager | null = null;
const steps: Array<() => Promise<void> | void> = [];

async function shutdown(code: number): Promise<never> {
  for (const step of steps.reverse()) {
    try {
      await step();
    } catch {
      // Exiting anyway; the primary logs the exit.
    }
  }
  process.exit(code);
}

function hostStats(state: Store['state'], manager: ClusterManager): HostStatsByCluster {
  const out: HostStatsByCluster = {};
  for (const name of Object.keys(state.clusters)) {
    const runtime = manager.get(name);
    if (!runtime) continue;
    out[name] = Object.fromEntries(runtime.hosts.map((h) => [h.address, { ...h.stats }]));
  }
  return out;
}

async function init(message: Extract<PrimaryMessage, { kind: 'init' }>): Promise<void> {
  const { options, state } = message;
  store = new RelayStore({ initial: state });
  stats = new StatsStore();
  const ctx: ServerContext = {
    options,
    store,
    stats,
    log: createLoggers(options),
    onShutdown: (step) => steps.push(step),
    shutdown,
  };
  const log = ctx.log.get('workers');
  // `/reset_counters` and the flush timer act on every process's stats, not only the primary's.
  let resets = state.stats.countersResetSeq;
  const resetWatch = store.state$.subscribe((s) => {
    if (s.stats.countersResetSeq === resets) return;
    resets = s.stats.countersResetSeq;
    stats?.resetCounters();
  });
  const flushMs = durationMs(state.bootstrap?.config.stats_flush_interval, 5000);
  const flushTimer = setInterval(() => stats?.flush(), flushMs);
  flushTimer.unref();
  steps.push(() => {
    resetWatch.unsubscribe();
    clearInterval(flushTimer);
  });
  // Hosts are resolved once, by the primary; a worker learns them from the events.
  clusters = await createClusterManager(ctx, {
    discovery: false,
    controlStats: false,
    onHostsRemoved: drainPools,
  });
  steps.push(() => clusters?.close());
  listeners = new ListenerManager(ctx, clusters);
  steps.push(() => listeners?.close());
  await listeners.start();
  log.debug({ worker: message.workerId }, 'data-plane worker ready');
  send({ kind: 'ready' });
}

process.on('message', (m: unknown) => {
  if (!isPrimaryMessage(m)) return;
  switch (m.kind) {
    case 'init':
      void init(m).catch((err) => {
        process.stderr.write(`data-plane worker failed to start: ${(err as Error).stack ?? err}\n`);
        process.exit(1);
      });
      return;
    case 'envelope':
      store?.ingest(m.env);
      return;
    case 'stats-request':
      if (stats && store && clusters)
        send({ kind: 'stats-dump', id: m.id, dump: dumpStats(stats, hostStats(store.state, clusters)) });
      return;
    case 'shutdown':
      void shutdown(0);
      return;
  }
});
// The primary is gone (crashed or killed): nothing to serve for.
process.on('disconnect', () => void shutdown(0));
send({ kind: 'hello' });
// Ctrl-C reaches the whole process group; the primary coordinates the shutdown.
process.on('SIGINT', () => {});
