import { Worker } from 'node:worker_threads';
import type { Subscription } from 'rxjs';
import type { JsonObject, ProxyEvent } from '../../../events/index.js';
import type { State } from '../../../reducers/index.js';
import { clockOrigin } from '../../control/clock.js';
import type { Core } from '../../core.js';
import { relayWorkerOutput } from '../../logging/broken-pipes.js';
import { workerResourceLimits } from '../../memory.js';
import type { OutcomeBatch } from '../../upstream/outcomes.js';
import type { PortSource } from '../listeners/sockets.js';
import {
  isWorkerMessage,
  type PrimaryMessage,
  type WorkerAnswer,
  type WorkerMessage,
  type WorkerQuery,
} from './messages.js';
import { ListenerReports } from './listener-reports.js';
import { bucketCells } from './shared-buckets.js';

/** Restarts of a crashed worker wait this long, so a worker that dies at once does not spin. */
const RESTART_DELAY_MS = 500;

interface Slot {
  id: number;
  worker: Worker | null;
  /** Set once the worker was sent its snapshot: from then on it gets every envelope. */
  initialised: boolean;
}

/** Node flags that take a value in the next argument. */
const WITH_VALUE = new Set([
  '--import',
  '--require',
  '-r',
  '--loader',
  '--experimental-loader',
  '--conditions',
  '-C',
]);

/**
 * The Node flags (command line, then `NODE_OPTIONS`) a worker thread needs: loaders
 * (`--import tsx`, an agent's `--require`) and profilers, which a thread does not take from
 * the process on its own. V8's flags (heap sizes and the like) are the process's already, and
 * a thread refuses them, as it refuses the flags that name what to run (`-e CODE`).
 */
export function workerExecArgv(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const name = arg.split('=')[0] as string;
    if (WITH_VALUE.has(arg) && i + 1 < argv.length) out.push(arg, argv[++i] as string);
    else if (WITH_VALUE.has(name) || name === '--enable-source-maps') out.push(arg);
    else if (/^--(cpu|heap)-prof/.test(name)) out.push(arg);
  }
  return out;
}

/** Where the primary takes what the workers send up, fixed when the pool starts. */
export interface WorkerPoolEdges {
  /** The workers' request outcomes: the primary's health edges. */
  onOutcomes: (batch: OutcomeBatch) => void;
}

/** The main thread's id among the data-plane threads: it serves too, beside the workers 1..N-1. */
export const PRIMARY_THREAD = 0;

/**
 * A port-0 listener's port while its first bind is under way: the thread binding it, and the
 * others' requests waiting for the port it gets.
 */
interface PortClaim {
  owner: number;
  waiting: Array<{ thread: number; answer: (port: number) => void }>;
}

/**
 * `--concurrency N` (N > 1): the main thread and N - 1 worker threads (`worker_threads`) of
 * this process serve the data plane, the main thread as thread 0 (each isolate costs 25-35 MB
 * of RSS, so none is spent on a thread that would only run the admin and the control plane:
 * bench/README.md, "Footprint: the main thread serves"). The
 * primary (the main thread) keeps the only store that stamps events; each worker starts from
 * the primary's snapshot and folds every batch the primary folds after it, so all hold the
 * same snapshots. Events a worker produces travel to the primary to be dispatched there;
 * the listener reports of every thread, the main one's included (`report`), are folded here.
 * Every thread binds each listener's address itself with `SO_REUSEPORT` (`reusePort`): the
 * kernel spreads the connections over their sockets. A port-0 listener is bound by one thread
 * first; the others bind the port it got (`ports`).
 */
export class WorkerPool {
  private readonly slots: Slot[];
  private envelopes: Subscription | null = null;
  /** Queries awaiting answers, by id: what came back so far and the workers still due. */
  private readonly pending = new Map<
    number,
    { kind: WorkerQuery['kind']; answers: unknown[]; due: Set<number>; done: () => void }
  >();
  /** Each live worker's latest answer to the kinds asked with `orLast`, by kind and worker. */
  private readonly lastAnswers = new Map<WorkerQuery['kind'], Map<number, unknown>>();
  private readonly readyWaiters = new Map<number, () => void>();
  /** Every thread's listener binds and stops, each folded into one event. */
  private readonly listenerReports = new ListenerReports(
    () => this.ctx.store.state,
    () => this.liveThreads(),
    (event, source) => this.ctx.store.dispatch(event, source),
  );
  /** Port-0 listeners being bound by a first worker, by listener name. */
  private readonly portClaims = new Map<string, PortClaim>();
  private nextRequest = 1;
  /** What the primary does with what the workers report: given to `start()`. */
  private edges: WorkerPoolEdges | null = null;
  /** Where the workers' tap traces go: the admin's `/tap` sessions (set by the first one). */
  onTapTrace: ((configId: string, trace: JsonObject) => void) | null = null;
  private closing = false;
  private running = false;
  /** SIGUSR1 reaches the main thread only: the workers reopen their log files when told. */
  private readonly onReopenSignal = () => this.reopenLogs();

  /**
   * `entry` is the module each worker thread runs (`src/server/worker.ts`): given by the
   * composition root that makes the pool, since the entry wires the whole data plane of a
   * thread and so stands above it.
   */
  constructor(
    private readonly ctx: Core,
    count: number,
    private readonly entry: URL,
  ) {
    this.slots = Array.from({ length: count }, (_, i) => ({ id: i + 1, worker: null, initialised: false }));
  }

  /**
   * Whether `start()` started the workers: until then (the admin starts first) the primary's
   * own stats are the server's.
   */
  get started(): boolean {
    return this.running;
  }

  /** Starts every worker; resolves once each has bound the listeners of the snapshot. */
  async start(edges: WorkerPoolEdges): Promise<void> {
    this.edges = edges;
    this.running = true;
    this.envelopes = this.ctx.store.applied$.subscribe(({ batch }) =>
      this.broadcast({ kind: 'batch', batch }),
    );
    process.on('SIGUSR1', this.onReopenSignal);
    await Promise.all(this.slots.map((slot) => this.spawn(slot)));
  }

  /**
   * Every live worker's answer to `query`; a worker silent for `timeoutMs` is left out, or
   * with `orLast` counts with its latest answer to a query of that kind (a loaded worker's
   * per-host totals would otherwise drop out of `/clusters` for one response).
   */
  ask<Q extends WorkerQuery>(query: Q, timeoutMs: number, orLast = false): Promise<Array<WorkerAnswer<Q>>> {
    const live = this.slots.filter((s) => s.worker && s.initialised);
    if (live.length === 0) return Promise.resolve([]);
    const id = this.nextRequest++;
    const last = orLast ? this.lastAnswersOf(query.kind) : null;
    return new Promise((resolve) => {
      const due = new Set(live.map((s) => s.id));
      const request = { kind: query.kind, answers: [] as unknown[], due, done: () => {} };
      const timer = setTimeout(() => request.done(), timeoutMs);
      request.done = () => {
        clearTimeout(timer);
        this.pending.delete(id);
        for (const silent of request.due) if (last?.has(silent)) request.answers.push(last.get(silent));
        // Each worker answers a query with the answer type of its kind (see `src/server/worker.ts`).
        resolve(request.answers as Array<WorkerAnswer<Q>>);
      };
      this.pending.set(id, request);
      for (const slot of live) this.send(slot, { kind: 'query', id, query });
    });
  }

  private lastAnswersOf(kind: WorkerQuery['kind']): Map<number, unknown> {
    const last = this.lastAnswers.get(kind) ?? new Map<number, unknown>();
    this.lastAnswers.set(kind, last);
    return last;
  }

  /**
   * Resolves once every live worker has folded every envelope ingested before the call (a
   * message port keeps order), so an admin switch answered after it holds in the data plane.
   */
  async settled(timeoutMs = 1000): Promise<void> {
    await this.ask({ kind: 'sync' }, timeoutMs);
  }

  /** `POST /reopen_logs` and SIGUSR1: every worker reopens its log and access log files. */
  reopenLogs(): void {
    this.broadcast({ kind: 'reopen-logs' });
  }

  /** Asks every worker to close its listeners and end; ends those still there after `graceMs`. */
  async close(graceMs = 5000): Promise<void> {
    this.closing = true;
    process.off('SIGUSR1', this.onReopenSignal);
    for (const resolve of this.readyWaiters.values()) resolve();
    this.readyWaiters.clear();
    this.envelopes?.unsubscribe();
    await Promise.all(
      this.slots.map(async (slot) => {
        const worker = slot.worker;
        if (!worker) return;
        const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
        this.send(slot, { kind: 'shutdown' });
        const timer = setTimeout(() => void worker.terminate(), graceMs);
        await exited;
        clearTimeout(timer);
      }),
    );
  }

  /**
   * Starts the worker of `slot`; resolves when it (or, after crashes, a successor) is ready,
   * so the server does not go LIVE with a worker that never bound its listeners.
   */
  private spawn(slot: Slot): Promise<void> {
    const log = this.ctx.log.get('workers');
    const worker = new Worker(this.entry, {
      execArgv: workerExecArgv([...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)]),
      env: { ...process.env, PROXY_WORKER_ID: String(slot.id) },
      resourceLimits: workerResourceLimits(),
      stdout: true,
      stderr: true,
    });
    relayWorkerOutput(worker);
    slot.worker = worker;
    slot.initialised = false;
    const ready = this.readyWaiters.has(slot.id)
      ? Promise.resolve()
      : new Promise<void>((resolve) => this.readyWaiters.set(slot.id, resolve));
    worker.on('message', (m: unknown) => {
      if (isWorkerMessage(m)) this.onMessage(slot, m);
    });
    worker.on('error', (err) => log.error({ err, worker: slot.id }, `data-plane worker ${slot.id} failed`));
    worker.on('exit', (code) => {
      if (slot.worker !== worker) return;
      slot.worker = null;
      slot.initialised = false;
      // A restarted worker starts its counts again: its predecessor's answers stand for nothing.
      for (const last of this.lastAnswers.values()) last.delete(slot.id);
      // A worker that ends owes no answer (and one that answered already is not counted twice).
      for (const request of this.pending.values()) {
        if (request.due.delete(slot.id) && request.due.size === 0) request.done();
      }
      this.releaseClaims(slot);
      this.listenerReports.settle();
      if (this.closing) {
        log.info({ worker: slot.id, code }, 'data-plane worker exited');
        return;
      }
      log.error({ worker: slot.id, code }, `data-plane worker ${slot.id} exited unexpectedly; restarting it`);
      this.ctx.stats.counter('listener_manager.worker_restarts').inc();
      setTimeout(() => {
        if (!this.closing) void this.spawn(slot);
      }, RESTART_DELAY_MS).unref();
    });
    return ready;
  }

  private onMessage(slot: Slot, m: WorkerMessage): void {
    switch (m.kind) {
      case 'hello':
        // From here on the worker gets every envelope, and the snapshot is the state just
        // before the next one: nothing falls between.
        this.send(slot, {
          kind: 'init',
          workerId: slot.id,
          options: this.ctx.options,
          state: this.ctx.store.state,
          buckets: bucketCells(),
          clockOrigin: clockOrigin(),
        });
        slot.initialised = true;
        return;
      case 'ready':
        this.readyWaiters.get(slot.id)?.();
        this.readyWaiters.delete(slot.id);
        return;
      case 'answer': {
        const request = this.pending.get(m.id);
        if (!request) return;
        if (!request.due.delete(slot.id)) return;
        request.answers.push(m.answer);
        this.lastAnswers.get(request.kind)?.set(slot.id, m.answer);
        if (request.due.size === 0) request.done();
        return;
      }
      case 'dispatch':
        this.report(m.event, m.source, slot.id);
        return;
      case 'outcomes':
        this.edges?.onOutcomes(m.batch);
        return;
      case 'tap-trace':
        this.onTapTrace?.(m.configId, m.trace);
        return;
      case 'port-request':
        this.claimPort(slot.id, m.listener, (port) =>
          this.send(slot, { kind: 'port-answer', id: m.id, port }),
        );
        return;
    }
  }

  /** The main thread's port-0 listeners bind the port the threads share, as a worker's do. */
  readonly ports: PortSource = {
    port: (listener) => new Promise((resolve) => this.claimPort(PRIMARY_THREAD, listener, resolve)),
  };

  /**
   * The port `thread` binds for the port-0 listener `name`: the one it is bound at already
   * (a worker restarted, or a later one), else 0 for the first asker, whose bind the others
   * wait for.
   */
  private claimPort(thread: number, name: string, answer: (port: number) => void): void {
    // Bound by every thread, or by some while the others are yet to answer.
    const bound = boundPort(this.ctx.store.state.listeners[name]) || this.listenerReports.boundPort(name);
    const claim = this.portClaims.get(name);
    if (!bound && claim) claim.waiting.push({ thread, answer });
    else {
      if (!bound) this.portClaims.set(name, { owner: thread, waiting: [] });
      answer(bound);
    }
  }

  /** The first bind of a port-0 listener ended: the waiting workers bind its port (0 if it failed). */
  private settleClaim(name: string, port: number): void {
    const claim = this.portClaims.get(name);
    if (!claim) return;
    this.portClaims.delete(name);
    for (const { answer } of claim.waiting) answer(port);
  }

  /** A worker that ended while binding first: the next waiting thread binds first instead. */
  private releaseClaims(slot: Slot): void {
    for (const [name, claim] of this.portClaims) {
      claim.waiting = claim.waiting.filter((w) => w.thread !== slot.id);
      if (claim.owner !== slot.id) continue;
      const next = claim.waiting.shift();
      if (!next) this.portClaims.delete(name);
      else {
        claim.owner = next.thread;
        next.answer(0);
      }
    }
  }

  /**
   * An event of data-plane thread `thread` (the main one's by default). Every thread binds
   * and stops the same listeners, so their reports are folded into one event each, once every
   * live thread answered (`ListenerReports`). Other events pass through as they are.
   */
  report(event: ProxyEvent, source: string, thread = PRIMARY_THREAD): void {
    switch (event.type) {
      case 'listener/bound':
      case 'listener/bind-failed':
        this.settleClaim(event.name, event.type === 'listener/bound' ? event.port : 0);
        this.listenerReports.bind(event, thread);
        return;
      case 'listener/stopped':
        this.listenerReports.stopped(event, thread, source);
        return;
      default:
        this.ctx.store.dispatch(event, source);
    }
  }

  /** The data-plane threads running now: the main one and every worker not ended. */
  private liveThreads(): number[] {
    return [PRIMARY_THREAD, ...this.slots.filter((s) => s.worker).map((s) => s.id)];
  }

  private broadcast(message: PrimaryMessage): void {
    for (const slot of this.slots) if (slot.initialised) this.send(slot, message);
  }

  private send(slot: Slot, message: PrimaryMessage): void {
    slot.worker?.postMessage(message);
  }
}

/** The port a listener is bound at (`ip:port` in its entry), or 0 while it is not. */
function boundPort(entry: State['listeners'][string] | undefined): number {
  if (!entry?.boundAddress || entry.state !== 'active') return 0;
  return Number(entry.boundAddress.slice(entry.boundAddress.lastIndexOf(':') + 1)) || 0;
}
