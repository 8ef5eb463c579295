/**
 * The xDS client: an edge that watches what the snapshot says should be discovered (`wants`),
 * keeps the transports that carry it (`Transports`), and turns every response into events,
 * accepted or rejected (`Subscribers`, `judgeResponse`), while initialisation waits on the
 * first answers (`InitTargets`). It runs once, in the primary; workers fold the events it
 * dispatches.
 */
import { secretRemoved } from '../../../events/index.js';
import type { State } from '../../../reducers/index.js';
import { disabledExtensions } from '../../bootstrap/catalog.js';
import type { GrpcSource } from '../../config/config-source.js';
import { compiledDynamicSources, type DynamicSources } from '../../config/dynamic-resources.js';
import type { Core } from '../../core.js';
import { prepareHashing } from '../../upstream/hash.js';
import { applyChange } from './apply.js';
import { InitTargets } from './init-targets.js';
import type { JudgeContext } from './judge.js';
import { Subscribers } from './subscribers.js';
import { SubscriptionStats } from './subscription-stats.js';
import { Transports } from './transports.js';
import { type Transport, TYPE_URLS } from './types.js';
import { type Want, wants } from './wants.js';
import { Warming } from './warming.js';
import { localNode } from './wire.js';

export interface XdsClient {
  /** Resolves once every initial fetch is done or timed out (the server may go LIVE). */
  readonly initialized: Promise<void>;
  close(): void;
}

/** The part of the server context discovery runs on. */
/**
 * Starts discovery for the snapshot's bootstrap (stopped at shutdown); with nothing to
 * discover it is initialised at once. `bindsListeners`: a data plane binds the listeners, so
 * a listener response is answered once they are bound (false where none runs beside it).
 */
export async function startXds(ctx: Core, bindsListeners = true): Promise<XdsClient> {
  // The `version` gauges hash each accepted version_info synchronously.
  await prepareHashing();
  const client = new DiscoveryClient(ctx, bindsListeners);
  ctx.onShutdown(() => client.close());
  return client;
}

/** The ADS source of the bootstrap (null without one, or with one not served, logged). */
function adsSource(dynamic: DynamicSources, log: ReturnType<Core['log']['get']>): GrpcSource | null {
  if (dynamic.adsErrors.length > 0)
    log.error({ errors: dynamic.adsErrors }, 'dynamic_resources.ads_config is not served');
  return dynamic.ads;
}

class DiscoveryClient implements XdsClient {
  private readonly dynamic;
  private readonly transports: Transports;
  private readonly init: InitTargets;
  private readonly subscribers: Subscribers;
  private readonly warming: Warming;
  /** The watches of the last reconcile, per transport: their type URLs. */
  private active = new Map<Transport, Set<string>>();
  /** What the last reconcile followed: the wants change only with these. */
  private seen: {
    clusters: State['clusters'] | null;
    listeners: State['listeners'] | null;
    waiting: number;
  } = {
    clusters: null,
    listeners: null,
    waiting: -1,
  };
  private due = false;
  private closed = false;
  private readonly subscription;

  constructor(
    private readonly ctx: Core,
    bindsListeners: boolean,
  ) {
    const log = ctx.log.get('upstream');
    const bootstrap = ctx.store.state.bootstrap?.config ?? {};
    this.dynamic = compiledDynamicSources(bootstrap);
    this.transports = new Transports(
      ctx.store,
      ctx.stats,
      log,
      adsSource(this.dynamic, log),
      localNode(bootstrap, ctx.options),
    );
    const subscriptions = new SubscriptionStats(ctx.stats, () => ctx.store.state);
    this.init = new InitTargets(
      (event, kind) => ctx.store.dispatch(event, kind),
      log,
      (kind, names) => subscriptions.timedOut(kind, names),
    );
    this.warming = new Warming((kind, resources) => {
      const state = ctx.store.state;
      const version =
        kind === 'cds' ? state.clusterManager.versionInfo : (state.discovery.versions.lds ?? '');
      applyChange(judge, kind, {
        resources,
        removed: [],
        version,
        versions: new Map(resources.map((r) => [r.name, r.version])),
        released: true,
      });
    }, log);
    const judge: JudgeContext = {
      store: ctx.store,
      stats: ctx.stats,
      log,
      bootstrap,
      walk: {
        allowUnknown: !ctx.options.rejectUnknownDynamicFields,
        disabled: disabledExtensions(ctx.options.disableExtensions ?? []).disabled,
      },
      ignoreUnknown: ctx.options.ignoreUnknownDynamicFields === true,
      unknownFields: ctx.stats.counter('server.dynamic_unknown_fields'),
      subscriptions,
      init: this.init,
      warming: this.warming,
      bindsListeners,
    };
    this.subscribers = new Subscribers(judge);
    // A response dispatches one event per resource: the subscriptions follow once, after them all.
    this.subscription = ctx.store.state$.subscribe(() => {
      if (this.due) return;
      this.due = true;
      queueMicrotask(() => {
        this.due = false;
        if (this.closed) return;
        this.warming.check(ctx.store.state);
        this.reconcile(ctx.store.state);
      });
    });
    queueMicrotask(() => this.init.check());
  }

  get initialized(): Promise<void> {
    return this.init.initialized;
  }

  private wants(state: State): Want[] {
    return wants(state, this.dynamic, (kind, source) => this.transports.keyOf(kind, source), {
      clusters: this.warming.configs('cds'),
      listeners: this.warming.configs('lds'),
    });
  }

  /** Follows the state: every watch it needs started or changed, the others stopped. */
  private reconcile(state: State): void {
    const { clusters, listeners } = state;
    const waiting = this.warming.generation;
    const seen = this.seen;
    if (clusters === seen.clusters && listeners === seen.listeners && waiting === seen.waiting) return;
    this.seen = { clusters, listeners, waiting };
    const next = new Map<Transport, Set<string>>();
    const wanted = this.wants(state);
    for (const w of wanted) {
      const stream = this.transports.streamFor(w.kind, w.source);
      if (!stream) continue;
      const typeUrl = TYPE_URLS[w.source.resourceVersion][w.kind];
      const timeout = w.source.initialFetchTimeoutMs;
      this.init.add(w.kind, w.names ? [...w.names] : [null], timeout);
      const delta = this.transports.isDelta(w.source);
      stream.watch(typeUrl, w.names ? [...w.names] : null, this.subscribers.of(w, delta));
      const urls = next.get(stream) ?? new Set<string>();
      urls.add(typeUrl);
      next.set(stream, urls);
    }
    for (const [stream, urls] of this.active)
      for (const url of urls) if (!next.get(stream)?.has(url)) stream.unwatch(url);
    this.transports.closeUnused(new Set(next.keys()));
    this.active = next;
    this.forgetSecrets(state, wanted);
    queueMicrotask(() => this.init.check());
  }

  /** Discovered secrets no TLS context names any more are removed (their key material with them). */
  private forgetSecrets(state: State, wanted: Want[]): void {
    const named = new Set<string>();
    for (const w of wanted) if (w.kind === 'sds') for (const name of w.names ?? []) named.add(name);
    for (const name of Object.keys(state.discovery.secrets))
      if (!named.has(name))
        this.ctx.store.dispatch(
          secretRemoved({ name, versionInfo: state.discovery.secrets[name]?.versionInfo ?? '' }),
          'sds',
        );
  }

  close(): void {
    this.closed = true;
    this.subscription.unsubscribe();
    this.init.close();
    this.subscribers.close();
    this.warming.close();
    this.transports.close();
  }
}
