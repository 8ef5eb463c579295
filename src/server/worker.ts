/**
 * A data-plane worker thread (`--concurrency N`, N > 1), started by `WorkerPool`. It folds
 * the primary's events into its own store, runs listeners and the cluster runtimes over
 * it, and answers stats requests with what moved in its stats since its last answer.
 */

import { parentPort } from 'node:worker_threads';
import type { Envelope, JsonObject, ProxyEvent } from '../../events/index.js';
import { buildContext, type ServerContext } from '../context-core.js';
import { adoptClockOrigin } from '../control/clock.js';
import { Store } from '../control/store.js';
import { flushAccessLogsAtExit, reopenAccessLogs } from '../dataplane/access-log/file-sink.js';
import { applyTapQuery } from '../dataplane/http/tap.js';
import { ListenerManager } from '../dataplane/listeners/manager.js';
import { ListenSockets, type PortSource } from '../dataplane/listeners/sockets.js';
import { type ClusterTraffic, clusterTraffic } from '../dataplane/pool/cluster-traffic.js';
import { drainPools } from '../dataplane/pool/index.js';
import { threadHostStats } from '../dataplane/workers/host-stats.js';
import {
  isPrimaryMessage,
  type PrimaryMessage,
  type ProfilerAnswer,
  type WorkerAnswers,
  type WorkerMessage,
  type WorkerQuery,
} from '../dataplane/workers/messages.js';
import { adoptBucketCells } from '../dataplane/workers/shared-buckets.js';
import { StatsTracker } from '../dataplane/workers/stats-delta.js';
import { startShrinkHeap } from '../edges/overload/shrink-heap.js';
import { collectStartUp, collectWhenIdle, memoryFigures } from '../memory.js';
import { profileFile } from '../profiler.js';
import { pairwise, startWith } from '../rx.js';
import { applyStatsControl } from '../stats/start.js';
import { type ClusterManager, createClusterManager } from '../upstream/cluster-manager.js';
import { relayOutcomes } from '../upstream/outcomes.js';

if (!parentPort) throw new Error('the data-plane worker runs as a worker thread of the proxy');
const port = parentPort;

function send(message: WorkerMessage): void {
  port.postMessage(message);
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

/** Port requests awaiting the primary's answer, by id. */
const portWaiters = new Map<number, (port: number) => void>();
let nextPortRequest = 1;

/** A port-0 listener binds the port the other workers bound it at; the primary knows which. */
const sharedPorts: PortSource = {
  port: (listener) =>
    new Promise((resolve) => {
      const id = nextPortRequest++;
      portWaiters.set(id, resolve);
      send({ kind: 'port-request', id, listener });
    }),
};

let workerId = 0;
let context: ServerContext | null = null;
let clusters: ClusterManager<ClusterTraffic> | null = null;
/** Where a large stats dump lets the data plane run. */
const pause = () => new Promise<void>((resolve) => setImmediate(resolve));
/** What of this worker's stats the primary was sent last. */
let tracker: StatsTracker | null = null;

/** Stops this worker: its shutdown steps, then the thread ends (at once when it never started). */
async function shutdown(code: number): Promise<void> {
  if (context) await context.shutdown(code);
  else process.exit(code);
}

async function init(message: Extract<PrimaryMessage, { kind: 'init' }>): Promise<void> {
  const { options, state } = message;
  workerId = message.workerId;
  adoptClockOrigin(message.clockOrigin);
  // Before any listener is built: its rate limit buckets are the primary's.
  adoptBucketCells(message.buckets);
  const ctx = buildContext(
    {
      options,
      store: new RelayStore({ initial: state }),
      // No socket is adopted from a hot-restart parent: the worker binds beside it (SO_REUSEPORT).
      sockets: new ListenSockets(null, sharedPorts),
    },
    null,
  );
  context = ctx;
  // The thread's access log lines reach their files however it ends; SIGUSR1 reaches the
  // primary only, which sends `reopen-logs`.
  ctx.onShutdown(flushAccessLogsAtExit());
  tracker = new StatsTracker(ctx.stats);
  const log = ctx.log.get('workers');
  // `/reset_counters` and the recent-lookup switches act on every thread's stats, not only
  // the primary's. The flush has no timer here: the primary's flush asks for it (a stats
  // query with `flush`), so every thread's interval windows cover the same flush interval.
  const controlWatch = ctx.store.state$
    .pipe(startWith(null), pairwise())
    .subscribe(([prev, next]) => next && applyStatsControl(ctx.stats, prev, next));
  ctx.onShutdown(() => controlWatch.unsubscribe());
  // Hosts are resolved once, by the primary's edges; a worker learns them from the events.
  const manager = await createClusterManager(ctx, {
    controlStats: false,
    onHostsRemoved: drainPools,
    // Health runs in the primary: it gets the outcomes of this worker's requests.
    onOutcome: relayOutcomes((batch) => send({ kind: 'outcomes', batch })),
    traffic: clusterTraffic,
  });
  clusters = manager;
  ctx.onShutdown(() => manager.close());
  // The main thread is slice 0 (it serves too), worker k slice k.
  const listeners = new ListenerManager(ctx, manager, { index: workerId, of: options.concurrency });
  ctx.onShutdown(() => listeners.close());
  // Each worker has its own heap: it collects while shrink_heap is active, as the primary does.
  const shrinkHeap = startShrinkHeap(ctx);
  if (shrinkHeap) ctx.onShutdown(shrinkHeap);
  await listeners.start();
  log.debug({ worker: workerId, ms: collectStartUp() }, 'start-up garbage collected');
  ctx.onShutdown(collectWhenIdle((ms) => log.debug({ worker: workerId, ms }, 'load ended: heap collected')));
  log.info({ worker: message.workerId }, 'data-plane worker started');
  send({ kind: 'ready' });
}

/** Starts or stops this worker's profiler; a stop writes the profile next to the primary's. */
async function profiler(query: Extract<WorkerQuery, { kind: 'profiler' }>): Promise<ProfilerAnswer> {
  const kind = query.profiler;
  if (!context) return { file: null, error: 'worker not started' };
  const { profilers } = context;
  if (query.enable) {
    if (profilers.isRunning(kind)) return { file: null, error: `worker ${workerId}: already started` };
    await profilers.start(kind);
    return { file: null, error: null };
  }
  if (!profilers.isRunning(kind)) return { file: null, error: `worker ${workerId}: not started` };
  const file = profileFile(query.path, kind, workerId);
  try {
    return { file: await profilers.stop(kind, file), error: null };
  } catch (err) {
    return { file: null, error: null, unwritten: `cannot write ${file}: ${(err as Error).message}` };
  }
}

async function answer(query: WorkerQuery): Promise<WorkerAnswers[keyof WorkerAnswers] | null> {
  switch (query.kind) {
    case 'sync':
      return true;
    case 'stats':
      if (!tracker) return null;
      if (query.flush) context?.stats.flush();
      return { worker: workerId, delta: await tracker.dump(query.since[workerId], pause) };
    case 'hosts':
      return context && clusters ? threadHostStats(context.store.state, clusters) : null;
    case 'recent-lookups':
      return context ? context.stats.recentLookups.dump() : null;
    case 'memory':
      return { worker: workerId, ...memoryFigures() };
    case 'tap': {
      const { configId } = query;
      const emit = (trace: JsonObject) => send({ kind: 'tap-trace', configId, trace });
      return context ? { hasFilter: applyTapQuery(context.taps, configId, query.request, emit) } : null;
    }
    case 'profiler':
      return profiler(query).catch((err: Error) => ({
        file: null,
        error: `worker ${workerId}: ${err.message}`,
      }));
  }
}

port.on('message', (m: unknown) => {
  if (!isPrimaryMessage(m)) return;
  switch (m.kind) {
    case 'init':
      void init(m).catch((err) => {
        process.stderr.write(`data-plane worker failed to start: ${(err as Error).stack ?? err}\n`);
        process.exit(1);
      });
      return;
    case 'batch':
      context?.store.fold(m.batch);
      return;
    case 'query':
      // A worker not yet started stays silent: the primary leaves it out after its timeout.
      void answer(m.query).then((a) => a && send({ kind: 'answer', id: m.id, answer: a }));
      return;
    case 'shutdown':
      void shutdown(0);
      return;
    case 'reopen-logs':
      context?.log.reopen();
      reopenAccessLogs();
      return;
    case 'port-answer': {
      const waiter = portWaiters.get(m.id);
      portWaiters.delete(m.id);
      waiter?.(m.port);
      return;
    }
  }
});
send({ kind: 'hello' });
