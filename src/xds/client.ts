/**
 * The xDS client: an edge that watches what the snapshot says should be discovered (CDS and
 * LDS from `dynamic_resources`, EDS for each EDS cluster, RDS for each HCM with `rds`), keeps
 * the streams that carry it, and turns every response into events (accepted or rejected).
 * It runs once, in the primary; workers fold the events it dispatches.
 */
import {
  clustersDiscovered,
  discoveryAccepted,
  discoveryTimedOut,
  hostsSet,
  initReady,
  initWaiting,
  listenerAdded,
  listenerRemoved,
  type RawCluster,
  type RawListener,
  rejectedAgain,
  routeConfigSet,
  secretRemoved,
  secretSet,
  updateRejected,
} from '../../events/index.js';
import { edsServiceName } from '../../reducers/discovery.js';
import { configuredEndpoints, hostKey } from '../../reducers/hosts.js';
import { entryOf, type State } from '../../reducers/index.js';
import { clusterStatName } from '../../reducers/settings/cluster.js';
import { objectOf } from '../../reducers/settings/values.js';
import { disabledExtensions } from '../bootstrap/extensions.js';
import { Report } from '../bootstrap/report.js';
import type { Options } from '../cli/options.js';
import type { Store } from '../control/store.js';
import type { Loggers } from '../logging/loggers.js';
import type { StatsStore } from '../stats/store.js';
import { clusterSdsRefs, listenerSdsRefs } from '../tls/sds-refs.js';
import { staticSecrets } from '../tls/secrets.js';
import { prepareHashing } from '../upstream/hash.js';
import { hostsChange } from '../upstream/host-diff.js';
import {
  type ConfigSourceSpec,
  compileApiConfigSource,
  configSourceOf,
  type GrpcSource,
} from './config-source.js';
import { FileSource } from './file-source.js';
import { rdsNamesOf } from './rds-names.js';
import { RejectedCopies } from './repeats.js';
import { type DecodedResource, decodeUpdate } from './resources.js';
import { RestPoller } from './rest-source.js';
import { unrefTimeout, XdsStream } from './stream.js';
import type { Subscriber, Transport, Update } from './types.js';
import { METHODS, RESOURCE_NAME, type ResourceKind, TYPE_URLS } from './types.js';
import { versionHash } from './version-hash.js';
import { localNode, nodeMessage } from './wire.js';

/** While a management server keeps re-sending a rejected update, how often the copies are reported. */
const REPEAT_REPORT_MS = 10_000;

/** One type on one stream: the names wanted (null: all) and the source's fetch timeout. */
interface Want {
  kind: ResourceKind;
  source: ConfigSourceSpec;
  names: Set<string> | null;
}

export interface XdsClient {
  /** Resolves once every initial fetch is done or timed out (the server may go LIVE). */
  readonly initialized: Promise<void>;
  close(): void;
}

/** The part of the server context discovery runs on. */
export interface XdsContext {
  readonly options: Options;
  readonly store: Store;
  readonly stats: StatsStore;
  readonly log: Loggers;
  onShutdown(step: () => Promise<void> | void): void;
}

/**
 * Starts discovery for the snapshot's bootstrap (stopped at shutdown); with nothing to
 * discover it is initialised at once.
 */
export async function startXds(ctx: XdsContext): Promise<XdsClient> {
  // The `version` gauges hash each accepted version_info synchronously.
  await prepareHashing();
  const client = createXdsClient(ctx);
  ctx.onShutdown(() => client.close());
  return client;
}

function createXdsClient(ctx: XdsContext): XdsClient {
  const log = ctx.log.get('upstream');
  const bootstrap = ctx.store.state.bootstrap?.config ?? {};
  const dynamic = objectOf(bootstrap.dynamic_resources);
  const adsReport = new Report('dynamic_resources.ads_config');
  const adsApi =
    dynamic.ads_config !== undefined
      ? compileApiConfigSource(objectOf(dynamic.ads_config), '', adsReport)
      : undefined;
  const ads: GrpcSource | null = adsApi?.api === 'GRPC' ? adsApi : null;
  // The node as proto3 JSON (REST) and as the gRPC encoder takes it.
  const nodeJson = localNode(bootstrap, ctx.options);
  const node = nodeMessage(nodeJson);
  const walk = {
    allowUnknown: !ctx.options.rejectUnknownDynamicFields,
    disabled: disabledExtensions(ctx.options.disableExtensions ?? []).disabled,
  };
  const streams = new Map<string, Transport>();
  const connected = new Set<XdsStream>();
  const connectedState = ctx.stats.gauge('control_plane.connected_state', 'NeverImport');
  const unknownFields = ctx.stats.counter('server.dynamic_unknown_fields');
  const streamCounters = {
    rateLimitEnforced: ctx.stats.counter('control_plane.rate_limit_enforced'),
    pendingRequests: ctx.stats.gauge('control_plane.pending_requests', 'NeverImport'),
  };
  /** Per watch (stream and type URL): copies of its last rejected update. */
  const rejectedCopies = new Map<string, { kind: ResourceKind; copies: RejectedCopies }>();
  let copiesTimer: NodeJS.Timeout | null = null;
  const picks = new Map<string, number>();

  // Initialisation: every target wanted before it is done holds it until its first
  // response (accepted or rejected) or its source's initial_fetch_timeout.
  let initDone = false;
  let resolveInit: () => void = () => {};
  const initialized = new Promise<void>((resolve) => {
    resolveInit = resolve;
  });
  const initTargets = new Map<string, NodeJS.Timeout | null>();
  const seenTargets = new Set<string>();
  const targetKey = (kind: ResourceKind, name: string | null) => `${kind}:${name ?? '*'}`;

  function addTarget(kind: ResourceKind, name: string | null, timeoutMs: number): void {
    const key = targetKey(kind, name);
    if (initDone || seenTargets.has(key)) return;
    seenTargets.add(key);
    const timer =
      timeoutMs > 0
        ? setTimeout(() => {
            log.warn({ kind, name }, `${kind.toUpperCase()} initial fetch timed out after ${timeoutMs} ms`);
            if (name !== null) ctx.store.dispatch(discoveryTimedOut({ kind, names: [name] }), kind);
            targetDone(kind, name);
          }, timeoutMs)
        : null;
    timer?.unref();
    initTargets.set(key, timer);
    ctx.store.dispatch(initWaiting({ targets: [key] }), kind);
  }

  function targetDone(kind: ResourceKind, name: string | null): void {
    const key = targetKey(kind, name);
    const timer = initTargets.get(key);
    if (timer === undefined) return;
    if (timer) clearTimeout(timer);
    initTargets.delete(key);
    ctx.store.dispatch(initReady({ targets: [key] }), kind);
    // A response may add targets through the events it dispatches: check once they are in.
    queueMicrotask(checkInit);
  }

  function checkInit(): void {
    if (initDone || initTargets.size > 0) return;
    initDone = true;
    resolveInit();
  }

  function grpcOf(source: ConfigSourceSpec): GrpcSource | null {
    if (source.kind === 'ads') return ads;
    return source.kind === 'grpc' ? source.grpc : null;
  }

  /** Where a source's resources arrive: its file, the ADS stream, or its cluster's stream of the kind. */
  function transportKey(kind: ResourceKind, source: ConfigSourceSpec): string | null {
    if (source.kind === 'path') return `file:${source.path}`;
    if (source.kind === 'rest') return `rest:${source.rest.cluster}|${source.rest.transport}`;
    const grpc = grpcOf(source);
    if (!grpc) return null;
    return source.kind === 'ads' ? 'ads' : `${grpc.cluster}|${grpc.transport}|${kind}`;
  }

  /** The management server to dial: the next member of its static cluster. */
  function targetOf(cluster: string): string | null {
    const hosts = entryOf(ctx.store.state.clusters, cluster)?.hosts ?? [];
    if (hosts.length === 0) return null;
    const n = picks.get(cluster) ?? 0;
    picks.set(cluster, n + 1);
    const host = hosts[n % hosts.length]!;
    return hostKey(host.ip, host.port);
  }

  function streamFor(kind: ResourceKind, source: ConfigSourceSpec): Transport | null {
    const key = transportKey(kind, source);
    if (key === null) return null;
    let stream = streams.get(key);
    if (!stream && source.kind === 'path') {
      stream = new FileSource(source.path, log);
      streams.set(key, stream);
    }
    if (!stream && source.kind === 'rest') {
      const cluster = source.rest.cluster;
      stream = new RestPoller(source.rest, () => targetOf(cluster), nodeJson, log);
      streams.set(key, stream);
    }
    const grpc = grpcOf(source);
    if (!stream && grpc) {
      const created = new XdsStream({
        method: METHODS[grpc.transport][source.kind === 'ads' ? 'ads' : kind],
        target: () => targetOf(grpc.cluster),
        node,
        nodeOnFirstOnly: grpc.nodeOnFirstOnly,
        rateLimit: grpc.rateLimit,
        counters: streamCounters,
        log,
        onConnected: (up) => {
          if (up) connected.add(created);
          else connected.delete(created);
          connectedState.set(connected.size > 0 ? 1 : 0);
        },
      });
      stream = created;
      streams.set(key, stream);
    }
    return stream ?? null;
  }

  /** What the snapshot says should be discovered, by type URL per stream key. */
  function wants(state: State): Want[] {
    const out = new Map<string, Want>();
    const want = (kind: ResourceKind, source: ConfigSourceSpec | null, name: string | null) => {
      if (!source) return;
      const key = `${transportKey(kind, source)}|${TYPE_URLS[source.resourceVersion][kind]}`;
      let w = out.get(key);
      if (!w) {
        w = { kind, source, names: name === null ? null : new Set() };
        out.set(key, w);
      }
      if (name !== null) w.names?.add(name);
    };
    if (dynamic.cds_config !== undefined) want('cds', configSourceOf(objectOf(dynamic.cds_config)), null);
    if (dynamic.lds_config !== undefined) want('lds', configSourceOf(objectOf(dynamic.lds_config)), null);
    for (const cluster of Object.values(state.clusters)) {
      if (cluster.config.type !== 'EDS') continue;
      const eds = objectOf(objectOf(cluster.config.eds_cluster_config).eds_config);
      want('eds', configSourceOf(eds), edsServiceName(cluster.config));
    }
    for (const listener of Object.values(state.listeners)) {
      for (const { name, configSource } of rdsNamesOf(listener.config))
        want('rds', configSourceOf(configSource), name);
      for (const ref of listenerSdsRefs(listener.config))
        want('sds', configSourceOf(ref.configSource), ref.name);
    }
    for (const cluster of Object.values(state.clusters))
      for (const ref of clusterSdsRefs(cluster.config))
        want('sds', configSourceOf(ref.configSource), ref.name);
    return [...out.values()];
  }

  let lastClusters: State['clusters'] | null = null;
  let lastListeners: State['listeners'] | null = null;
  let active = new Map<Transport, Set<string>>();

  function reconcile(state: State): void {
    if (state.clusters === lastClusters && state.listeners === lastListeners) return;
    lastClusters = state.clusters;
    lastListeners = state.listeners;
    const next = new Map<Transport, Set<string>>();
    for (const w of wants(state)) {
      const stream = streamFor(w.kind, w.source);
      if (!stream) continue;
      const typeUrl = TYPE_URLS[w.source.resourceVersion][w.kind];
      if (w.names === null) addTarget(w.kind, null, w.source.initialFetchTimeoutMs);
      else for (const name of w.names) addTarget(w.kind, name, w.source.initialFetchTimeoutMs);
      stream.watch(typeUrl, w.names ? [...w.names] : null, subscriberOf(w));
      const urls = next.get(stream) ?? new Set<string>();
      urls.add(typeUrl);
      next.set(stream, urls);
    }
    for (const [stream, urls] of active) {
      for (const url of urls) if (!next.get(stream)?.has(url)) stream.unwatch(url);
    }
    for (const [key, stream] of streams) {
      if (!next.has(stream)) {
        stream.close();
        streams.delete(key);
        if (stream instanceof XdsStream) connected.delete(stream);
      }
    }
    active = next;
    forgetSecrets(state);
    queueMicrotask(checkInit);
  }

  /** Discovered secrets no TLS context names any more are removed (their key material with them). */
  function forgetSecrets(state: State): void {
    const named = new Set<string>();
    for (const w of wants(state)) if (w.kind === 'sds') for (const name of w.names ?? []) named.add(name);
    for (const name of Object.keys(state.discovery.secrets))
      if (!named.has(name))
        ctx.store.dispatch(
          secretRemoved({ name, versionInfo: state.discovery.secrets[name]?.versionInfo ?? '' }),
          'sds',
        );
  }

  /**
   * What a watch is told: each update judged whole by `onResponse` (a throw there is a bug of
   * ours, answered as a rejection, never a crash), each failed fetch and each bare attempt
   * counted in the scopes of the subscriptions it serves.
   */
  function subscriberOf(w: Want): Subscriber {
    const key = `${transportKey(w.kind, w.source)}|${TYPE_URLS[w.source.resourceVersion][w.kind]}`;
    let copies = rejectedCopies.get(key);
    if (!copies) {
      copies = { kind: w.kind, copies: new RejectedCopies() };
      rejectedCopies.set(key, copies);
    }
    const seen = copies.copies;
    return {
      onUpdate: (update) => {
        const again = seen.again(update);
        if (again !== null) {
          count(w.kind, w.names, 'update_rejected');
          reportCopiesSoon();
          return again;
        }
        reportCopies(w.kind, seen);
        let error: string | null;
        try {
          error = onResponse(w, update);
        } catch (err) {
          log.error({ err, kind: w.kind }, `${w.kind.toUpperCase()} update failed`);
          count(w.kind, w.names, 'update_rejected');
          error = `update failed: ${(err as Error).message}`;
        }
        seen.judged(update, error);
        return error;
      },
      onFailure: () => {
        reportCopies(w.kind, seen);
        count(w.kind, w.names, 'update_failure');
      },
      onAttempt: () => count(w.kind, w.names, null),
    };
  }

  /** The copies of a rejected update counted since the last report: one event, one warning. */
  function reportCopies(kind: ResourceKind, seen: RejectedCopies): void {
    const report = seen.report();
    if (!report) return;
    const { version, error, count: n } = report;
    log.warn(
      { kind, version, count: n },
      `${kind.toUpperCase()} update rejected again ${n} time(s) (identical response): ${error}`,
    );
    ctx.store.dispatch(
      rejectedAgain({ kind, resource: RESOURCE_NAME[kind], versionInfo: version, count: n, error }),
      kind,
    );
  }

  /** While copies keep coming, their count is reported every `REPEAT_REPORT_MS`. */
  function reportCopiesSoon(): void {
    copiesTimer ??= unrefTimeout(REPEAT_REPORT_MS, () => {
      copiesTimer = null;
      for (const { kind, copies } of rejectedCopies.values()) reportCopies(kind, copies);
    });
  }

  /**
   * The stat scopes of the subscriptions a watch of `names` serves: CDS and LDS have one each;
   * each EDS cluster and each HCM's route table is its own subscription in the reference, so a
   * response counts in the scope of every one it names.
   */
  function subscriptionScopes(kind: ResourceKind, names: ReadonlySet<string> | null): string[] {
    switch (kind) {
      case 'cds':
        return ['cluster_manager.cds'];
      case 'lds':
        return ['listener_manager.lds'];
      case 'eds':
        return Object.values(ctx.store.state.clusters)
          .filter((entry) => entry.config.type === 'EDS' && names?.has(edsServiceName(entry.config)))
          .map((entry) => `cluster.${clusterStatName(entry.config)}`);
      case 'rds': {
        const scopes = new Set<string>();
        for (const listener of Object.values(ctx.store.state.listeners))
          for (const { name, statPrefix } of rdsNamesOf(listener.config))
            if (names?.has(name)) scopes.add(`http.${statPrefix}.rds.${name}`);
        return [...scopes];
      }
      case 'sds':
        return [...(names ?? [])].map((name) => `sds.${name}`);
    }
  }

  /**
   * One fetch in each subscription's scope, as the reference counts it: every outcome is an
   * `update_attempt` too; an accepted one sets the `version` gauge (and an RDS `config_reload`).
   */
  function count(
    kind: ResourceKind,
    names: ReadonlySet<string> | null,
    outcome: 'update_success' | 'update_rejected' | 'update_failure' | null,
    version = '',
  ): void {
    for (const prefix of subscriptionScopes(kind, names)) {
      const scope = ctx.stats.scope(prefix);
      scope.counter('update_attempt').inc();
      if (outcome) scope.counter(outcome).inc();
      if (outcome !== 'update_success') continue;
      scope.gauge('version', 'NeverImport').set(versionHash(version));
      if (kind === 'rds') scope.counter('config_reload').inc();
    }
  }

  /**
   * Judges one response whole, as the reference does: a response with any finding (its shape,
   * a resource that does not decode or compile, a duplicate or missing name, a static name) is
   * rejected and changes nothing; else every resource in it is applied.
   */
  function onResponse(w: Want, update: Update): string | null {
    const kind = w.kind;
    const clusters = new Set(Object.keys(ctx.store.state.clusters));
    const decoded = decodeUpdate(kind, update, walk, staticSecrets(bootstrap), clusters);
    const version = decoded.version;
    // Unknown fields only reach the walk from JSON (file, REST): binary decoding drops them.
    if (!ctx.options.ignoreUnknownDynamicFields && decoded.unknownFields > 0) {
      unknownFields.add(decoded.unknownFields);
      for (const warning of decoded.warnings) log.warn(warning);
    }
    const rejected = [...decoded.rejected, ...staticConflicts(kind, decoded.resources)];
    if (decoded.errors.length > 0) rejected.push({ name: '', errors: decoded.errors });
    if (rejected.length > 0) {
      const errors = rejected.flatMap((r) => r.errors);
      for (const bad of rejected)
        ctx.store.dispatch(
          updateRejected({
            resource: RESOURCE_NAME[kind],
            name: bad.name,
            versionInfo: version,
            errors: bad.errors,
          }),
          kind,
        );
      count(kind, w.names, 'update_rejected');
      // The initial fetch is over either way: a rejected update ends the wait of every name watched.
      if (w.names === null) targetDone(kind, null);
      else for (const name of w.names) targetDone(kind, name);
      log.warn({ kind, version }, `${kind.toUpperCase()} update rejected: ${errors.join('; ')}`);
      return errors.join('; ');
    }
    apply(kind, decoded.resources, version);
    const names = decoded.resources.map((r) => r.name);
    // A file or REST subscription counts every fetch it accepts in its own scope, as the
    // reference's do; a gRPC mux tells an EDS or RDS watch only of a response naming it.
    const polled = w.source.kind === 'path' || w.source.kind === 'rest';
    count(kind, polled ? w.names : new Set(names), 'update_success', version);
    if (kind === 'cds' || kind === 'lds') targetDone(kind, null);
    for (const name of names) targetDone(kind, name);
    // An empty response answers every name watched (none of them has resources yet).
    if (names.length === 0)
      for (const key of [...initTargets.keys()])
        if (key.startsWith(`${kind}:`)) targetDone(kind, key.slice(kind.length + 1));
    ctx.store.dispatch(discoveryAccepted({ kind, versionInfo: version, names }), kind);
    return null;
  }

  /** Discovered clusters and listeners named like static ones of the bootstrap: discovery cannot change those. */
  function staticConflicts(
    kind: ResourceKind,
    resources: DecodedResource[],
  ): Array<{ name: string; errors: string[] }> {
    const state = ctx.store.state;
    const out: Array<{ name: string; errors: string[] }> = [];
    for (const { name } of resources) {
      const cluster = kind === 'cds' ? entryOf(state.clusters, name) : undefined;
      const listener = kind === 'lds' ? entryOf(state.listeners, name) : undefined;
      if ((cluster && !cluster.addedViaApi) || (listener && !listener.discovered))
        out.push({
          name,
          errors: [
            `${RESOURCE_NAME[kind]} '${name}': a static ${kind === 'cds' ? 'cluster' : 'listener'} of the bootstrap; discovery cannot change it`,
          ],
        });
    }
    return out;
  }

  /** Applies a wholly valid response: its resources change together. */
  function apply(kind: ResourceKind, resources: DecodedResource[], version: string): void {
    switch (kind) {
      case 'eds':
        applyEndpoints(resources, version);
        return;
      case 'cds':
        applyClusters(resources, version);
        return;
      case 'lds':
        applyListeners(resources, version);
        return;
      case 'rds':
        for (const r of resources) {
          log.info({ version }, `rds: loading new configuration: config_name=${r.name}`);
          ctx.store.dispatch(
            routeConfigSet({ routeConfig: { ...r.config, name: r.name }, versionInfo: version }),
            'rds',
          );
        }
        return;
      case 'sds':
        applySecrets(resources, version);
        return;
    }
  }

  /** A secret whose content changed is set (new handshakes use it); one unchanged is not an event. */
  function applySecrets(resources: DecodedResource[], version: string): void {
    for (const r of resources) {
      const existing = entryOf(ctx.store.state.discovery.secrets, r.name);
      if (existing && same(existing.config, r.config)) continue;
      // The name and version only: the key material stays out of every log line.
      log.info({ secret: r.name, version }, `sds: secret '${r.name}' ${existing ? 'updated' : 'added'}`);
      ctx.store.dispatch(secretSet({ secret: { ...r.config, name: r.name }, versionInfo: version }), 'sds');
    }
  }

  function applyEndpoints(resources: DecodedResource[], version: string): void {
    const byService = new Map(resources.map((r) => [r.name, r.config]));
    for (const entry of Object.values(ctx.store.state.clusters)) {
      if (entry.config.type !== 'EDS') continue;
      const assignment = byService.get(edsServiceName(entry.config));
      if (!assignment) continue;
      const scope = ctx.stats.scope(`cluster.${clusterStatName(entry.config)}`);
      const hosts = configuredEndpoints({ name: entry.name, load_assignment: assignment });
      if (hosts.length === 0) scope.counter('update_empty').inc();
      log.debug({ version }, `eds: cluster '${entry.name}' has ${hosts.length} host(s)`);
      const event =
        hostsChange(entry.name, entry.hosts, hosts, version) ??
        (entry.warming ? hostsSet({ cluster: entry.name, hosts, versionInfo: version }) : null);
      if (event) ctx.store.dispatch(event, 'eds');
      else scope.counter('update_no_rebuild').inc();
    }
  }

  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

  function applyClusters(resources: DecodedResource[], version: string): void {
    const state = ctx.store.state;
    const named = new Set(resources.map((r) => r.name));
    const added: RawCluster[] = [];
    const updated: RawCluster[] = [];
    for (const { name, config } of resources) {
      const existing = entryOf(state.clusters, name);
      const cluster = config as RawCluster;
      if (!existing) added.push(cluster);
      else if (!same(existing.config, cluster)) updated.push(cluster);
    }
    const removed = Object.values(state.clusters)
      .filter((entry) => entry.addedViaApi && !named.has(entry.name))
      .map((entry) => entry.name);
    // The reference's line: every cluster of the response is "added" (new, changed or the same).
    log.info({ version }, `cds: add ${resources.length} cluster(s), remove ${removed.length} cluster(s)`);
    if (added.length + updated.length + removed.length > 0)
      ctx.store.dispatch(clustersDiscovered({ versionInfo: version, added, updated, removed }), 'cds');
  }

  function applyListeners(resources: DecodedResource[], version: string): void {
    const state = ctx.store.state;
    const named = new Set(resources.map((r) => r.name));
    for (const { name, config } of resources) {
      const existing = entryOf(state.listeners, name);
      if (!existing || !same(existing.config, config)) {
        log.info({ version }, `lds: add/update listener '${name}'`);
        ctx.store.dispatch(listenerAdded({ listener: config as RawListener, versionInfo: version }), 'lds');
      }
    }
    for (const entry of Object.values(state.listeners)) {
      if (entry.discovered && !named.has(entry.name)) {
        log.info({ version }, `lds: remove listener '${entry.name}'`);
        ctx.store.dispatch(listenerRemoved({ name: entry.name, versionInfo: version }), 'lds');
      }
    }
  }

  if (adsReport.failed) log.error({ errors: adsReport.errors }, 'dynamic_resources.ads_config is not served');
  // A response dispatches one event per resource: the subscriptions follow once, after them all.
  let due = false;
  let closed = false;
  const subscription = ctx.store.state$.subscribe(() => {
    if (due) return;
    due = true;
    queueMicrotask(() => {
      due = false;
      if (!closed) reconcile(ctx.store.state);
    });
  });
  queueMicrotask(checkInit);
  return {
    initialized,
    close() {
      closed = true;
      subscription.unsubscribe();
      for (const timer of initTargets.values()) if (timer) clearTimeout(timer);
      if (copiesTimer) clearTimeout(copiesTimer);
      for (const stream of streams.values()) stream.close();
      streams.clear();
      resolveInit();
    },
  };
}
