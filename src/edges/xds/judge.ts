/**
 * Judges one discovery response whole, as the reference does: a response with any finding (its
 * shape, a resource that does not decode or compile, a duplicate or missing name, a static
 * name) is rejected and changes nothing; else every resource in it is applied. State of the
 * world and delta are judged by the same rules; they differ in what an accepted one removes.
 */

import type { JsonObject } from '../../../events/config.js';
import { discoveryAccepted, updateRejected } from '../../../events/index.js';
import { entryOf } from '../../../reducers/index.js';
import type { WalkContext } from '../../bootstrap/walk-context.js';
import { duplicateAddresses, duplicateAddressMessage } from '../../config/listener-addresses.js';
import { staticSecrets } from '../../config/secrets.js';
import { type ApplyContext, applyChange, type Change } from './apply.js';
import { decodeDeltaUpdate } from './delta-resources.js';
import type { InitTargets } from './init-targets.js';
import { bindFailures, listenersBefore, pendingBinds, restoreListeners } from './listener-binds.js';
import { type DecodedResource, type DecodedResponse, decodeUpdate } from './resources.js';
import type { SubscriptionStats } from './subscription-stats.js';
import { type Judged, RESOURCE_NAME, type ResourceKind, type Update } from './types.js';
import type { Want } from './wants.js';

export interface JudgeContext extends ApplyContext {
  readonly bootstrap: JsonObject;
  readonly walk: Omit<WalkContext, 'report'>;
  /** `--ignore-unknown-dynamic-fields`: unknown fields let through are not counted. */
  readonly ignoreUnknown: boolean;
  readonly unknownFields: { add(n: number): void };
  readonly subscriptions: SubscriptionStats;
  readonly init: InitTargets;
  /** A data plane binds the listeners: a listener response waits for their binds. */
  readonly bindsListeners: boolean;
}

/** A watch's response, decoded, with what it changes when accepted. */
function decode(
  ctx: JudgeContext,
  w: Want,
  delta: boolean,
  update: Update,
): DecodedResponse & { change: Change } {
  const clusters = new Set(Object.keys(ctx.store.state.clusters));
  const secrets = staticSecrets(ctx.bootstrap);
  if (delta) {
    const decoded = decodeDeltaUpdate(w.kind, update, ctx.walk, secrets, clusters);
    return {
      ...decoded,
      change: {
        resources: decoded.resources,
        removed: decoded.removed,
        version: decoded.version,
        versions: decoded.versions,
      },
    };
  }
  const decoded = decodeUpdate(w.kind, update, ctx.walk, secrets, clusters);
  return { ...decoded, change: { resources: decoded.resources, removed: null, version: decoded.version } };
}

/**
 * Judges `update` for the watch `w`: null accepts it (applied), a message rejects it (the
 * NACK's detail). A listener response that binds listeners is judged once they are bound
 * (src/edges/xds/listener-binds.ts): a promise.
 */
export function judgeResponse(ctx: JudgeContext, w: Want, delta: boolean, update: Update): Judged {
  const kind = w.kind;
  const decoded = decode(ctx, w, delta, update);
  const version = decoded.version;
  // Unknown fields by name (JSON: file, REST) and by number (binary: gRPC), from the walk.
  if (!ctx.ignoreUnknown && decoded.unknownFields > 0) {
    ctx.unknownFields.add(decoded.unknownFields);
    for (const warning of decoded.warnings) ctx.log.warn(warning);
  }
  const rejected = [
    ...decoded.rejected,
    ...staticConflicts(ctx, kind, decoded.resources),
    ...addressConflicts(ctx, kind, decoded.change),
  ];
  if (decoded.errors.length > 0) rejected.push({ name: '', errors: decoded.errors });
  if (rejected.length > 0) return reject(ctx, w, version, rejected);
  const before =
    kind === 'lds' && ctx.bindsListeners ? listenersBefore(ctx.store.state, decoded.resources) : null;
  applyChange(ctx, kind, decoded.change);
  const binding = before ? pendingBinds(ctx.store.state, before) : [];
  if (!before || binding.length === 0) return accepted(ctx, w, delta, decoded);
  return bindFailures(ctx.store, binding).then((failed) => {
    if (failed.length === 0) return accepted(ctx, w, delta, decoded);
    restoreListeners(
      ctx.store,
      before,
      failed.map((f) => f.name),
      version,
    );
    return reject(ctx, w, version, failed);
  });
}

/** An applied response: counted, the initial fetch of what it names over, its version recorded. */
function accepted(
  ctx: JudgeContext,
  w: Want,
  delta: boolean,
  decoded: DecodedResponse & { change: Change },
): null {
  const kind = w.kind;
  const version = decoded.version;
  const names = decoded.resources.map((r) => r.name);
  // A file or REST subscription counts every fetch it accepts in its own scope, as the
  // reference's do; a gRPC mux tells an EDS or RDS watch only of a response naming it.
  const polled = w.source.kind === 'path' || w.source.kind === 'rest';
  const told = new Set([...names, ...(decoded.change.removed ?? [])]);
  ctx.subscriptions.count(kind, polled ? w.names : told, 'update_success', version);
  ctx.init.done(kind, kind === 'cds' || kind === 'lds' ? [null, ...names] : names);
  // An empty state-of-the-world response answers every name watched (none has resources yet);
  // an empty delta one says nothing of them.
  if (names.length === 0 && !delta) ctx.init.doneAllOf(kind);
  ctx.store.dispatch(discoveryAccepted({ kind, versionInfo: version, names }), kind);
  return null;
}

/** A rejected response: one event per resource it names, counted; the initial fetch is over. */
function reject(
  ctx: JudgeContext,
  w: Want,
  version: string,
  rejected: Array<{ name: string; errors: string[] }>,
): string {
  const kind = w.kind;
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
  ctx.subscriptions.count(kind, w.names, 'update_rejected');
  // The initial fetch is over either way: a rejected update ends the wait of every name watched.
  ctx.init.done(kind, w.names ? [...w.names] : [null]);
  ctx.log.warn({ kind, version }, `${kind.toUpperCase()} update rejected: ${errors.join('; ')}`);
  return errors.join('; ');
}

/** Discovered clusters and listeners named like static ones of the bootstrap: discovery cannot change those. */
/**
 * LDS: the listeners of a response that would share an address with another listener once it is
 * applied (a static one, a discovered one it keeps, or another of the response), refused as the
 * reference refuses them. Judged on the state after the update, so two listeners may swap
 * addresses in one response.
 */
function addressConflicts(
  ctx: JudgeContext,
  kind: ResourceKind,
  change: Change,
): Array<{ name: string; errors: string[] }> {
  if (kind !== 'lds') return [];
  const incoming = new Set(change.resources.map((r) => r.name));
  const removed = change.removed === null ? null : new Set(change.removed);
  const kept = Object.values(ctx.store.state.listeners).filter(
    (e) =>
      !incoming.has(e.name) &&
      e.state !== 'failed' &&
      e.state !== 'stopped' &&
      (!e.discovered || (removed !== null && !removed.has(e.name))),
  );
  const all = [
    ...kept.map((e) => ({ name: e.name, config: e.config as JsonObject })),
    ...change.resources.map((r) => ({ name: r.name, config: r.config })),
  ];
  return duplicateAddresses(all)
    .filter((d) => incoming.has(d.name))
    .map((d) => ({ name: d.name, errors: [duplicateAddressMessage(d)] }));
}

function staticConflicts(
  ctx: JudgeContext,
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
