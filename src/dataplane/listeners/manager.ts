import type { Subscription } from 'rxjs';
import {
  listenerBindFailed,
  listenerBound,
  listenersStopped,
  type ProxyEvent,
} from '../../../events/index.js';
import type { ListenerEntry, State } from '../../../reducers/index.js';
import { compiledListener } from '../../config/listener.js';
import { listenerSdsRefs } from '../../config/sds-refs.js';
import { type Secrets, secretsOf } from '../../config/secrets.js';
import type { ServerContext } from '../../context-core.js';
import { clockNow } from '../../control/clock.js';
import { socketKey } from '../../hot-restart-protocol.js';
import type { ClusterLookup } from '../http/types.js';
import { buildChain } from '../network-filters/registry.js';
import { reportPeerFaults } from '../peer-faults.js';
import { ConnectionLimits, WHOLE, type WorkerSlice } from './limits.js';
import { ActiveListener } from './listener.js';

type Drain = State['drain'];

/** Listener states in which this process should hold the socket open. */
const SERVING: ReadonlySet<ListenerEntry['state']> = new Set(['pending', 'active', 'draining']);

/**
 * Keeps the process's listening sockets in step with the snapshot's `listeners` and
 * `drain`: binds what appears, closes what goes, and carries out `/drain_listeners`.
 * Results go back as events (`listener/bound`, `listener/bind-failed`, `listener/stopped`).
 */
export class ListenerManager {
  private readonly listeners = new Map<string, ActiveListener>();
  /** The config each name was last bound with: a discovered listener's new config rebinds it. */
  private readonly boundConfigs = new Map<string, ListenerEntry['config']>();
  /** Names a bind was started for: a listener is tried once per appearance, not per snapshot. */
  private readonly attempted = new Set<string>();
  private readonly pending = new Set<Promise<void>>();
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Listeners removed or replaced, draining until their drain time ends. */
  private readonly retiring = new Set<ActiveListener>();
  private appliedDrain: Drain | null = null;
  private subscription: Subscription | null = null;
  private lastListeners: State['listeners'] | null = null;
  private lastDrain: Drain | null = null;
  private lastSecrets: Secrets | null = null;
  /** The overload action stop_accepting_connections is active: listeners hold new connections. */
  private acceptPaused = false;
  /** Open connections against the runtime limits, over every listener of this process. */
  private readonly limits: ConnectionLimits;

  /**
   * `slice`: which data-plane thread this is, for its share of the limits. `report`: where its
   * listener events go, the store's dispatch unless the main thread serves beside workers
   * (`WorkerPool.report` folds every thread's reports into one event).
   */
  constructor(
    private readonly ctx: ServerContext,
    private readonly clusters: ClusterLookup,
    private readonly slice: WorkerSlice = WHOLE,
    private readonly report: (event: ProxyEvent, source: string) => void = (event, source) =>
      ctx.store.dispatch(event, source),
  ) {
    this.limits = new ConnectionLimits(() => ctx.store.state, slice);
    reportPeerFaults(ctx);
  }

  /** Starts following the snapshots; resolves once the listeners present now are bound or failed. */
  async start(): Promise<void> {
    this.subscription = this.ctx.store.state$.subscribe((state) => this.reconcile(state));
    await Promise.all([...this.pending]);
  }

  /** Stops following snapshots and closes every listener and its connections. */
  async close(): Promise<void> {
    this.subscription?.unsubscribe();
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    await Promise.all([...this.pending]);
    await Promise.all([...this.listeners.values(), ...this.retiring].map((l) => l.close()));
    this.listeners.clear();
    this.retiring.clear();
  }

  private reconcile(state: State): void {
    const paused = state.server.overload?.stop_accepting_connections === true;
    if (paused !== this.acceptPaused) {
      this.acceptPaused = paused;
      for (const l of this.listeners.values()) l.pauseAccepting(paused && !l.spec.bypassOverload);
    }
    const secrets = secretsOf(state);
    if (secrets !== this.lastSecrets) {
      const first = this.lastSecrets === null;
      this.lastSecrets = secrets;
      if (!first) this.rotateSecrets(secrets);
    }
    if (state.listeners !== this.lastListeners) {
      this.lastListeners = state.listeners;
      for (const entry of Object.values(state.listeners)) {
        if (!SERVING.has(entry.state)) continue;
        if (this.attempted.has(entry.name)) {
          // A discovered listener's new config (a bind that failed is tried again with it).
          if (this.boundConfigs.get(entry.name) !== entry.config) this.track(this.bind(entry));
          continue;
        }
        if (state.drain.active && this.affected(state.drain, entry.config.traffic_direction)) {
          // After a drain, listeners of the drained direction are not added (a restarted
          // worker still joins listeners that are draining gracefully).
          if (entry.state !== 'draining') continue;
        }
        this.attempted.add(entry.name);
        this.track(this.bind(entry));
      }
      for (const [name, listener] of this.listeners) {
        if (state.listeners[name]) continue;
        this.listeners.delete(name);
        this.attempted.delete(name);
        this.boundConfigs.delete(name);
        listener.stopAccepting();
        this.retire(listener);
      }
    }
    if (state.drain !== this.lastDrain) {
      this.lastDrain = state.drain;
      if (state.drain.active && state.drain.startedAt !== this.appliedDrain?.startedAt) {
        this.appliedDrain = state.drain;
        // Binds under way finish first so that the drain sees them.
        this.track(Promise.all([...this.pending]).then(() => this.drain(state.drain)));
      }
    }
  }

  /**
   * Secrets changed: each bound listener whose chains name a discovered secret gets its TLS
   * contexts compiled again; new handshakes use them, open connections carry on.
   */
  private rotateSecrets(secrets: Secrets): void {
    for (const [name, listener] of this.listeners) {
      const config = this.boundConfigs.get(name);
      if (!config || listenerSdsRefs(config).length === 0) continue;
      const { value: spec, findings } = compiledListener(config, secrets);
      if (!spec) {
        this.ctx.log
          .get('listener')
          .error({ listener: name }, `rotated secrets not used: ${findings.errors.join('; ')}`);
        continue;
      }
      spec.chains.forEach((chain, i) => {
        if (chain.tls) listener.updateTls(i, chain.tls);
      });
    }
  }

  private track(work: Promise<unknown>): void {
    const p = work.then(
      () => undefined,
      (err) => this.ctx.log.get('listener').error({ err }, 'listener work failed'),
    );
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  private async bind(entry: ListenerEntry): Promise<void> {
    const log = this.ctx.log.get('listener');
    const fail = (error: string) => {
      log.error({ listener: entry.name }, error);
      this.report(listenerBindFailed({ name: entry.name, error }), 'listener');
    };
    // The compile step `--mode validate` and discovery ran, now with the secrets SDS delivered.
    const { value: spec, findings } = compiledListener(entry.config, secretsOf(this.ctx.store.state));
    if (!spec) return fail(findings.errors.join('; '));
    const deps = {
      ctx: this.ctx,
      clusters: this.clusters,
      listenerName: spec.name,
      bufferLimitBytes: spec.bufferLimitBytes,
      slice: this.slice,
      bypassOverload: spec.bypassOverload,
    };
    const handlers = spec.chains.map((chain) => buildChain(chain.filters, deps));
    const listener = new ActiveListener(spec, handlers, this.ctx.stats, this.limits);
    listener.pauseAccepting(this.acceptPaused && !spec.bypassOverload);
    if (spec.handOffToOriginalDst) listener.handOff = (ip, port) => this.listenerAt(ip, port);
    this.boundConfigs.set(entry.name, entry.config);
    const previous = this.listeners.get(spec.name);
    if (
      previous &&
      previous.spec.ip === spec.ip &&
      previous.spec.port === spec.port &&
      previous.isAccepting
    ) {
      // A changed listener on the same address takes over the bound socket: new connections
      // get the new filter chains at once (none refused), the old ones drain.
      listener.takeOver(previous);
      this.listeners.set(spec.name, listener);
      this.retire(previous);
      log.info({ listener: spec.name }, 'listener updated in place');
      // Pending only when put back after a failed move (src/edges/xds/listener-binds.ts): it
      // is bound again, where it was.
      if (entry.state === 'pending') {
        const { address, port } = listener.address;
        this.report(listenerBound({ name: spec.name, address, port }), 'listener');
      }
      return;
    }
    try {
      // A hot-restart child accepts on its parent's socket for the address: none is refused.
      const inherited = spec.port === 0 ? null : await this.ctx.sockets.adopt(socketKey(spec.ip, spec.port));
      const bound = await listener.listen(inherited, await this.ctx.sockets.port(spec.name, spec.port));
      listener.offerTo(this.ctx.sockets, socketKey(bound.address, bound.port));
      this.listeners.set(spec.name, listener);
      if (previous) {
        previous.stopAccepting();
        this.retire(previous);
      }
      // At debug: the primary logs each bound listener once at info, from its event.
      log.debug(
        { listener: spec.name, address: bound.address, port: bound.port, inherited: inherited !== null },
        inherited ? "listener took over the parent epoch's socket" : 'listener bound',
      );
      this.report(listenerBound({ name: spec.name, address: bound.address, port: bound.port }), 'listener');
    } catch (err) {
      await listener.close();
      const e = err as NodeJS.ErrnoException;
      fail(
        `listener '${spec.name}': cannot bind ${spec.ip}:${spec.port}: ${e.code ?? e.message}; ` +
          'free the address, or give another port (0 picks a free one)',
      );
    }
  }

  /**
   * The accepting listener bound at `ip:port`, else one bound at the wildcard address on `port`,
   * as the reference finds the listener for a `use_original_dst` hand-off.
   */
  private listenerAt(ip: string, port: number): ActiveListener | null {
    let wildcard: ActiveListener | null = null;
    for (const l of this.listeners.values()) {
      if (l.spec.port !== port || !l.isAccepting) continue;
      if (l.spec.ip === ip) return l;
      if (l.spec.ip === '0.0.0.0' || l.spec.ip === '::') wildcard ??= l;
    }
    return wildcard;
  }

  /**
   * A listener removed or replaced by discovery: its connections drain over `--drain-time-s`
   * with `--drain-strategy`, then whatever is left is closed.
   */
  private retire(listener: ActiveListener): void {
    const drainMs = this.ctx.options.drainTimeS * 1000;
    listener.drain(this.ctx.options.drainStrategy, drainMs);
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void listener.close();
    }, drainMs);
    this.timers.add(timer);
    this.retiring.add(listener);
    void listener.closed.then(() => this.retiring.delete(listener));
  }

  private affected(drain: Drain, direction: unknown): boolean {
    return !drain.inboundOnly || direction === 'INBOUND';
  }

  /**
   * `/drain_listeners`: connections are asked to drain over the drain time; the server
   * sockets close at once, or with `graceful` at the end of the drain time (until then
   * they keep accepting, and what they accept drains too).
   */
  private drain(drain: Drain): void {
    const targets = [...this.listeners.values()].filter(
      (l) => l.isAccepting && this.affected(drain, l.spec.direction),
    );
    if (targets.length === 0) return;
    // `startedAt` is an envelope's `at`: the store's clock, not the wall clock.
    const left = Math.max(0, drain.startedAt + drain.drainTimeMs - clockNow());
    for (const l of targets) l.drain(drain.strategy, left);
    const stop = () => {
      for (const l of targets) l.stopAccepting();
      this.report(listenersStopped({ names: targets.map((l) => l.spec.name) }), 'listener');
    };
    if (!drain.graceful) {
      stop();
      return;
    }
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      stop();
    }, left);
    this.timers.add(timer);
  }
}
