/**
 * A wholly valid discovery response, applied: its resources turned into the events that change
 * the state, together. A state-of-the-world response is every resource of its type (a CDS or
 * LDS resource it leaves out is removed); a delta one is the resources that changed, each with
 * its own version, and the names removed.
 */
import {
  clustersDiscovered,
  type JsonObject,
  listenerAdded,
  listenerRemoved,
  type RawCluster,
  type RawListener,
  routeConfigSet,
  secretSet,
} from '../../../events/index.js';
import { edsServiceName } from '../../../reducers/discovery.js';
import { entryOf } from '../../../reducers/index.js';
import { clusterStatName } from '../../../reducers/settings/cluster.js';
import { compiledClusterLoadAssignment } from '../../config/load-assignment.js';
import type { Store } from '../../control/store.js';
import type { Loggers } from '../../logging/loggers.js';
import type { StatsStore } from '../../stats/store.js';
import type { DecodedResource } from './resources.js';
import type { Warming } from './warming.js';
import type { ResourceKind } from './types.js';

/** What one accepted response changes. */
export interface Change {
  resources: DecodedResource[];
  /** Delta: the names removed; null: state of the world (what the response leaves out is gone). */
  removed: string[] | null;
  /** The response's version (`version_info`, or delta's `system_version_info`). */
  version: string;
  /** Delta: each resource's own version, which its state records. */
  versions?: ReadonlyMap<string, string>;
  /** Resources whose wait for their secrets is over: applied as they are. */
  released?: true;
}

/** Where applying runs: the store it dispatches to, the stats it counts in, the log it writes. */
export interface ApplyContext {
  readonly store: Store;
  readonly stats: StatsStore;
  readonly log: ReturnType<Loggers['get']>;
  /** Where discovered clusters and listeners wait for their secrets; none: applied at once. */
  readonly warming?: Warming;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

const versionOf = (change: Change, name: string) => change.versions?.get(name) ?? change.version;

/** Applies a wholly valid response of `kind`. */
export function applyChange(ctx: ApplyContext, kind: ResourceKind, change: Change): void {
  switch (kind) {
    case 'eds':
      applyEndpoints(ctx, change);
      return;
    case 'cds':
      applyClusters(ctx, change);
      return;
    case 'lds':
      applyListeners(ctx, change);
      return;
    case 'rds':
      applyRoutes(ctx, change);
      return;
    case 'sds':
      applySecrets(ctx, change);
      return;
  }
}

/**
 * A delta removal of an endpoint assignment, a route table or a secret changes nothing, as in
 * the reference: the cluster keeps its hosts, the listener its routes, the context its secret
 * until it names another.
 */
function ignoredRemovals(ctx: ApplyContext, kind: ResourceKind, change: Change): void {
  if (change.removed && change.removed.length > 0)
    ctx.log.warn(
      { kind, removed: change.removed.slice(0, 10) },
      `${kind}: the server removed ${change.removed.length} resource(s); kept as they are`,
    );
}

function applyRoutes(ctx: ApplyContext, change: Change): void {
  ignoredRemovals(ctx, 'rds', change);
  for (const r of change.resources) {
    const versionInfo = versionOf(change, r.name);
    ctx.log.info({ version: versionInfo }, `rds: loading new configuration: config_name=${r.name}`);
    // The decoded config itself (it holds its name): its table, compiled by decodeResources, is
    // found by its identity (src/config/route-configuration.ts).
    const routeConfig = r.config as JsonObject & { name: string };
    ctx.store.dispatch(routeConfigSet({ routeConfig, versionInfo }), 'rds');
  }
}

/** A secret whose content changed is set (new handshakes use it); one unchanged is not an event. */
function applySecrets(ctx: ApplyContext, change: Change): void {
  ignoredRemovals(ctx, 'sds', change);
  for (const r of change.resources) {
    const existing = entryOf(ctx.store.state.discovery.secrets, r.name);
    if (existing && same(existing.config, r.config)) continue;
    const versionInfo = versionOf(change, r.name);
    // The name and version only: the key material stays out of every log line.
    ctx.log.info(
      { secret: r.name, version: versionInfo },
      `sds: secret '${r.name}' ${existing ? 'updated' : 'added'}`,
    );
    ctx.store.dispatch(secretSet({ secret: { ...r.config, name: r.name }, versionInfo }), 'sds');
  }
}

function applyEndpoints(ctx: ApplyContext, change: Change): void {
  ignoredRemovals(ctx, 'eds', change);
  const byService = new Map(change.resources.map((r) => [r.name, r.config]));
  for (const entry of Object.values(ctx.store.state.clusters)) {
    if (entry.config.type !== 'EDS') continue;
    const service = edsServiceName(entry.config);
    const assignment = byService.get(service);
    if (!assignment) continue;
    const version = versionOf(change, service);
    const scope = ctx.stats.scope(`cluster.${clusterStatName(entry.config)}`);
    // The members decodeResources compiled, found by the assignment's identity.
    const hosts = compiledClusterLoadAssignment(assignment);
    if (hosts.length === 0) scope.counter('update_empty').inc();
    ctx.log.debug({ version }, `eds: cluster '${entry.name}' has ${hosts.length} host(s)`);
    const received = { cluster: entry.name, hosts, versionInfo: version };
    if (!ctx.store.receiveHosts(received, 'eds')) scope.counter('update_no_rebuild').inc();
  }
}

/**
 * The resources of a response to apply now: those naming secrets SDS (or, a changed listener,
 * route tables RDS) has yet to send wait (`Warming`); held ones the response removes, or (state of the world) leaves out, are
 * forgotten.
 */
function readyNow(ctx: ApplyContext, kind: 'cds' | 'lds', change: Change): DecodedResource[] {
  const wait = ctx.warming;
  if (!wait || change.released) return change.resources;
  if (change.removed) wait.drop(kind, change.removed);
  else wait.keepOnly(kind, new Set(change.resources.map((r) => r.name)));
  const state = ctx.store.state;
  return change.resources.filter((r) => !wait.hold(kind, r, versionOf(change, r.name), state));
}

function applyClusters(ctx: ApplyContext, change: Change): void {
  const state = ctx.store.state;
  const named = new Set(change.resources.map((r) => r.name));
  const added: RawCluster[] = [];
  const updated: RawCluster[] = [];
  for (const { name, config } of readyNow(ctx, 'cds', change)) {
    const existing = entryOf(state.clusters, name);
    const cluster = config as RawCluster;
    if (!existing) added.push(cluster);
    else if (!same(existing.config, cluster)) updated.push(cluster);
  }
  const gone = change.removed ? new Set(change.removed) : null;
  const removed = Object.values(state.clusters)
    .filter((entry) => entry.addedViaApi && (gone ? gone.has(entry.name) : !named.has(entry.name)))
    .map((entry) => entry.name);
  // The reference's line: every cluster of the response is "added" (new, changed or the same).
  ctx.log.info(
    { version: change.version },
    `cds: add ${change.resources.length} cluster(s), remove ${removed.length} cluster(s)`,
  );
  if (added.length + updated.length + removed.length === 0) return;
  const versions = change.versions
    ? Object.fromEntries([...added, ...updated].map((c) => [c.name, versionOf(change, c.name)]))
    : undefined;
  ctx.store.dispatch(
    clustersDiscovered({
      versionInfo: change.version,
      added,
      updated,
      removed,
      ...(versions ? { versions } : {}),
    }),
    'cds',
  );
}

function applyListeners(ctx: ApplyContext, change: Change): void {
  const state = ctx.store.state;
  const named = new Set(change.resources.map((r) => r.name));
  for (const { name, config } of readyNow(ctx, 'lds', change)) {
    const existing = entryOf(state.listeners, name);
    const versionInfo = versionOf(change, name);
    if (!existing || !same(existing.config, config)) {
      ctx.log.info({ version: versionInfo }, `lds: add/update listener '${name}'`);
      ctx.store.dispatch(listenerAdded({ listener: config as RawListener, versionInfo }), 'lds');
    }
  }
  const gone = change.removed ? new Set(change.removed) : null;
  for (const entry of Object.values(state.listeners)) {
    if (entry.discovered && (gone ? gone.has(entry.name) : !named.has(entry.name))) {
      ctx.log.info({ version: change.version }, `lds: remove listener '${entry.name}'`);
      ctx.store.dispatch(listenerRemoved({ name: entry.name, versionInfo: change.version }), 'lds');
    }
  }
}
