import cluster, { type Worker } from 'node:cluster';
import { fileURLToPath } from 'node:url';
import type { Subscription } from 'rxjs';
import type { JsonObject, ProxyEvent } from '../../../events/index.js';
import type { State } from '../../../reducers/index.js';
import type { Core } from '../../core.js';
import { socketKey } from '../../server/hot-restart/protocol.js';
import type { OutcomeBatch } from '../../upstream/health/outcomes.js';
import {
  isWorkerMessage,
  type PrimaryMessage,
  type WorkerAnswer,
  type WorkerMessage,
  type WorkerQuery,
} from './messages.js';

/** The worker entry next to this file: `.ts` under tsx, `.js` in the build. */
const WORKER_ENTRY = fileURLToPath(
  new URL(`./worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url),
);
/** Restarts of a crashed worker wait this long, so a worker that dies at once does not spin. */
const RESTART_DELAY_MS = 500;

interface Slot {
  id: number;
  worker: Worker | null;
  /** Set once the worker was sent its snapshot: from then on it gets every envelope. */
  initialised: boolean;
}

/**
 * The parent's Node flags minus the ones that name what to run (`-e CODE`, `-p`,
 * `--input-type`, `--`): loaders such as `--import tsx` carry over, the script is the worker's.
 */
function workerExecArgv(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '-e' || arg === '--eval' || arg === '-p' || arg === '--print') i += 1;
    else if (
      arg === '--' ||
      arg.startsWith('--input-type') ||
      arg.startsWith('--eval=') ||
      arg.startsWith('--print=')
    )
      continue;
    else out.push(arg);
  }
  return out;
}

/** Where the primary takes what the workers send up, fixed when the pool starts. */
export interface WorkerPoolEdges {
  /** The workers' request outcomes: the primary's health edges. */
  onOutcomes: (batch: OutcomeBatch) => void;
  /**
   * Where the workers' listeners adopt sockets from: the hot-restart parent epoch, through
   * the primary's link to it.
   */
  adoptSocket: (address: string) => Promise<object | null>;
}

/**
 * `--concurrency N` (N > 1): N data-plane processes under `node:cluster`. The primary keeps
 * the only store that stamps events; each worker starts from the primary's snapshot and
 * folds every envelope the primary ingests after it, so all hold the same snapshots. Events
 * a worker produces travel to the primary to be dispatched there. Listening sockets are
 * shared: the primary binds each address once and every worker accepts on it, the kernel
 * choosing which (SCHED_NONE).
 */
export class WorkerPool {
  private readonly slots: Slot[];
  private envelopes: Subscription | null = null;
  private listenerWatch: Subscription | null = null;
  /** Queries awaiting answers, by id: what came back so far and the workers still due. */
  private readonly pending = new Map<number, { answers: unknown[]; due: Set<number>; done: () => void }>();
  private readonly readyWaiters = new Map<number, () => void>();
  /** Per listener: the workers that reported it stopped (the listener is stopped when all did). */
  private readonly stoppedBy = new Map<string, Set<number>>();
  private nextRequest = 1;
  /** What the primary does with what the workers ask and report: given to `start()`. */
  private edges: WorkerPoolEdges | null = null;
  /**
   * Inherited sockets by address, kept open here so that a worker restarted after the parent
   * exited listens on the same socket as the others (binding it again would fail).
   */
  private readonly inherited = new Map<string, Promise<object | null>>();
  /** `lendSocket` requests awaiting a worker's answer, by id. */
  private readonly lends = new Map<number, (handle: object | null) => void>();
  /** Where the workers' tap traces go: the admin's `/tap` sessions (set by the first one). */
  onTapTrace: ((configId: string, trace: JsonObject) => void) | null = null;
  private closing = false;
  private forked = false;

  constructor(
    private readonly ctx: Core,
    count: number,
  ) {
    this.slots = Array.from({ length: count }, (_, i) => ({ id: i + 1, worker: null, initialised: false }));
  }

  /**
   * Whether `start()` forked the workers: until then (the admin starts first) the primary's
   * own stats are the server's.
   */
  get started(): boolean {
    return this.forked;
  }

  /** Forks every worker; resolves once each has bound the listeners of the snapshot. */
  async start(edges: WorkerPoolEdges): Promise<void> {
    this.edges = edges;
    this.forked = true;
    this.envelopes = this.ctx.store.ingested$.subscribe((env) => this.broadcast({ kind: 'envelope', env }));
    this.listenerWatch = this.ctx.store.state$.subscribe((state) => this.releaseUnused(state.listeners));
    // Must precede the first fork: the kernel balances accepts over the shared sockets,
    // where the default round-robin would accept everything in the primary and pass sockets on.
    cluster.schedulingPolicy = cluster.SCHED_NONE;
    cluster.setupPrimary({ exec: WORKER_ENTRY, args: [], execArgv: workerExecArgv(process.execArgv) });
    await Promise.all(this.slots.map((slot) => this.fork(slot)));
  }

  /** Every live worker's answer to `query`; a worker silent for `timeoutMs` is left out. */
  ask<Q extends WorkerQuery>(query: Q, timeoutMs: number): Promise<Array<WorkerAnswer<Q>>> {
    const live = this.slots.filter((s) => s.worker && s.initialised);
    if (live.length === 0) return Promise.resolve([]);
    const id = this.nextRequest++;
    return new Promise((resolve) => {
      const request = { answers: [] as unknown[], due: new Set(live.map((s) => s.id)), done: () => {} };
      const timer = setTimeout(() => request.done(), timeoutMs);
      request.done = () => {
        clearTimeout(timer);
        this.pending.delete(id);
        // Each worker answers a query with the answer type of its kind (see `worker.ts`).
        resolve(request.answers as Array<WorkerAnswer<Q>>);
      };
      this.pending.set(id, request);
      for (const slot of live) this.send(slot, { kind: 'query', id, query });
    });
  }

  /**
   * Resolves once every live worker has folded every envelope ingested before the call (the
   * IPC channel keeps order), so an admin switch answered after it holds in the data plane.
   */
  async settled(timeoutMs = 1000): Promise<void> {
    await this.ask({ kind: 'sync' }, timeoutMs);
  }

  /**
   * A worker's listening socket at `address`, for the hot-restart child (every worker accepts
   * on the same socket), or null when none answers within `timeoutMs`.
   */
  lendSocket(address: string, timeoutMs = 2000): Promise<object | null> {
    const slot = this.slots.find((s) => s.worker && s.initialised);
    if (!slot) return Promise.resolve(null);
    const id = this.nextRequest++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(null), timeoutMs);
      const done = (handle: object | null) => {
        clearTimeout(timer);
        this.lends.delete(id);
        resolve(handle);
      };
      this.lends.set(id, done);
      this.send(slot, { kind: 'socket-lend', id, address });
    });
  }

  /** Asks every worker to close its listeners and exit; kills those still there after `graceMs`. */
  async close(graceMs = 5000): Promise<void> {
    this.closing = true;
    for (const resolve of this.readyWaiters.values()) resolve();
    this.readyWaiters.clear();
    this.envelopes?.unsubscribe();
    this.listenerWatch?.unsubscribe();
    for (const handle of this.inherited.values())
      void handle.then((h) => (h as { close(): void } | null)?.close());
    this.inherited.clear();
    await Promise.all(
      this.slots.map(async (slot) => {
        const worker = slot.worker;
        if (!worker || worker.isDead()) return;
        const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
        this.send(slot, { kind: 'shutdown' });
        const timer = setTimeout(() => worker.process.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      }),
    );
  }

  /**
   * Forks the worker of `slot`; resolves when it (or, after crashes, a successor) is ready,
   * so the server does not go LIVE with a worker that never bound its listeners.
   */
  private fork(slot: Slot): Promise<void> {
    const log = this.ctx.log.get('workers');
    const worker = cluster.fork({ PROXY_WORKER_ID: String(slot.id) });
    slot.worker = worker;
    slot.initialised = false;
    const ready = this.readyWaiters.has(slot.id)
      ? Promise.resolve()
      : new Promise<void>((resolve) => this.readyWaiters.set(slot.id, resolve));
    worker.on('message', (m: unknown, handle: unknown) => {
      if (isWorkerMessage(m)) this.onMessage(slot, m, (handle as object | undefined) ?? null);
    });
    worker.on('error', (err) => log.warn({ err, worker: slot.id }, 'worker IPC error'));
    worker.on('exit', (code, signal) => {
      slot.worker = null;
      slot.initialised = false;
      // A worker that dies owes no answer (and one that answered already is not counted twice).
      for (const request of this.pending.values()) {
        if (request.due.delete(slot.id) && request.due.size === 0) request.done();
      }
      if (this.closing) {
        log.info({ worker: slot.id, code, signal }, 'data-plane worker exited');
        return;
      }
      log.error(
        { worker: slot.id, code, signal },
        `data-plane worker ${slot.id} exited unexpectedly; restarting it`,
      );
      this.ctx.stats.counter('listener_manager.worker_restarts').inc();
      setTimeout(() => {
        if (!this.closing) void this.fork(slot);
      }, RESTART_DELAY_MS).unref();
    });
    return ready;
  }

  private onMessage(slot: Slot, m: WorkerMessage, handle: object | null): void {
    switch (m.kind) {
      case 'hello':
        // From here on the worker gets every envelope, and the snapshot is the state just
        // before the next one: nothing falls between.
        this.send(slot, {
          kind: 'init',
          workerId: slot.id,
          options: this.ctx.options,
          state: this.ctx.store.state,
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
        if (request.due.size === 0) request.done();
        return;
      }
      case 'dispatch':
        this.dispatchFromWorker(slot, m.event, m.source);
        return;
      case 'outcomes':
        this.edges?.onOutcomes(m.batch);
        return;
      case 'tap-trace':
        this.onTapTrace?.(m.configId, m.trace);
        return;
      case 'socket-request':
        void this.inheritedSocket(m.address).then((inherited) => {
          const worker = slot.worker;
          if (inherited && worker?.isConnected()) {
            worker.send(
              { kind: 'socket-answer', id: m.id, found: true } satisfies PrimaryMessage,
              inherited as never,
            );
          } else this.send(slot, { kind: 'socket-answer', id: m.id, found: false });
        });
        return;
      case 'socket-lent':
        this.lends.get(m.id)?.(m.found ? handle : null);
        return;
    }
  }

  /**
   * Lets go of inherited sockets whose address no listener has any more (removed by listener
   * discovery): kept here, the address would stay bound and connections would wait unanswered.
   */
  private releaseUnused(listeners: State['listeners']): void {
    if (this.inherited.size === 0) return;
    const used = new Set<string>();
    for (const entry of Object.values(listeners)) {
      const socket = (entry.config.address as { socket_address?: { address?: string; port_value?: number } })
        ?.socket_address;
      if (socket?.address !== undefined) used.add(socketKey(socket.address, Number(socket.port_value ?? 0)));
    }
    for (const [address, socket] of this.inherited) {
      if (used.has(address)) continue;
      this.inherited.delete(address);
      void socket.then((h) => (h as { close(): void } | null)?.close());
    }
  }

  private inheritedSocket(address: string): Promise<object | null> {
    let socket = this.inherited.get(address);
    if (!socket) {
      socket = (this.edges?.adoptSocket(address) ?? Promise.resolve(null)).catch((err) => {
        this.ctx.log.get('workers').error({ err, address }, 'hot restart: no inherited socket');
        return null;
      });
      this.inherited.set(address, socket);
    }
    return socket;
  }

  /**
   * Every worker binds and stops the same listeners, so listener reports are folded into
   * one event: the first bind (or bind failure) of a listener, and its stop once every
   * live worker has stopped it. Other events pass through as they are.
   */
  private dispatchFromWorker(slot: Slot, event: ProxyEvent, source: string): void {
    const state = this.ctx.store.state;
    switch (event.type) {
      case 'listener/bound':
      case 'listener/bind-failed': {
        const entry = state.listeners[event.name];
        if (entry && entry.state === 'pending') this.ctx.store.dispatch(event, source);
        return;
      }
      case 'listener/stopped': {
        const live = this.slots.filter((s) => s.worker).map((s) => s.id);
        const done: string[] = [];
        for (const name of event.names) {
          const by = this.stoppedBy.get(name) ?? new Set<number>();
          by.add(slot.id);
          this.stoppedBy.set(name, by);
          if (live.every((id) => by.has(id)) && state.listeners[name]?.state !== 'stopped') done.push(name);
        }
        if (done.length > 0) this.ctx.store.dispatch({ ...event, names: done }, source);
        return;
      }
      default:
        this.ctx.store.dispatch(event, source);
    }
  }

  private broadcast(message: PrimaryMessage): void {
    for (const slot of this.slots) if (slot.initialised) this.send(slot, message);
  }

  private send(slot: Slot, message: PrimaryMessage): void {
    const worker = slot.worker;
    if (!worker?.isConnected()) return;
    worker.send(message, (err: Error | null) => {
      if (err) this.ctx.log.get('workers').warn({ err, worker: slot.id }, 'message to worker lost');
    });
  }
}
