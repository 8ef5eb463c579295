/**
 * A small incremental (delta) xDS management server for tests: ADS and the per-type delta
 * services, v2 and v3, on one gRPC port. Tests set resources (proto3 JSON) per kind; each
 * resource's version is a hash of its content, so a restarted server knows the versions a
 * client held. Every stream gets, per type, the resources it subscribed to that it does not
 * hold at their version, and the removal of those it held that are gone. Every request and
 * every response is recorded, so tests can wait for an ACK or a NACK and count what was sent.
 */
import { createHash } from 'node:crypto';
import {
  DELTA_METHODS,
  type DeltaDiscoveryRequest,
  type DeltaDiscoveryResponse,
  kindOfTypeUrl,
  RESOURCE_KINDS,
  type ResourceKind,
  TYPE_URLS,
} from '../../src/edges/xds/types.js';
import { decodeDeltaRequest, encodeDeltaResponse } from '../../src/edges/xds/wire.js';
import { DiscoveryStreams, type Stream } from './discovery-streams.js';
import { wireResource } from './xds-server.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

export interface SeenDeltaRequest extends DeltaDiscoveryRequest {
  stream: number;
  method: string;
  /** True when the request answers the last response of its type on its stream (an ACK or a NACK). */
  answers: boolean;
}

export interface SentDeltaResponse {
  stream: number;
  typeUrl: string;
  nonce: string;
  names: string[];
  removed: string[];
}

interface Sub {
  /** null: wildcard (every name). */
  names: Set<string> | null;
  /** The version the client holds of each resource. */
  held: Map<string, string>;
  nonce: string;
  typeUrl: string;
}

type Conn = Stream<DeltaDiscoveryRequest, DeltaDiscoveryResponse, Sub>;

const nameOf = (kind: ResourceKind, json: JsonObject) =>
  String(kind === 'eds' ? json.cluster_name : json.name);

/** A resource's version: a hash of its content, the same in every server run. */
export const versionOfResource = (json: JsonObject): string =>
  createHash('sha256').update(JSON.stringify(json)).digest('hex').slice(0, 16);

export class DeltaXdsServer extends DiscoveryStreams<
  DeltaDiscoveryRequest,
  DeltaDiscoveryResponse,
  SeenDeltaRequest,
  Sub
> {
  readonly responses: SentDeltaResponse[] = [];
  private readonly resources = new Map<ResourceKind, Map<string, JsonObject>>();
  private systemVersion = '';

  static async start(port = 0): Promise<DeltaXdsServer> {
    const server = new DeltaXdsServer();
    await server.listen(port);
    return server;
  }

  listen(port: number): Promise<void> {
    return this.bind(port, DELTA_METHODS, { decode: decodeDeltaRequest, encode: encodeDeltaResponse });
  }

  /** Replaces every resource of a kind; each stream is sent what changed for it. */
  set(kind: ResourceKind, items: JsonObject[], systemVersion: string): void {
    this.resources.set(kind, new Map(items.map((i) => [nameOf(kind, i), i])));
    this.systemVersion = systemVersion;
    for (const conn of this.conns) if (conn.subs.has(kind)) this.push(conn, kind);
  }

  protected describe(r: SeenDeltaRequest): string {
    return `${r.type_url} n=${r.response_nonce} +${r.resource_names_subscribe.length} -${r.resource_names_unsubscribe.length} ${r.error_detail?.message ?? ''}`;
  }

  /** The ACK (or, with `nack`, the NACK) of the next response of `kind` after request `from`. */
  answer(kind: ResourceKind, from = 0, nack = false, timeoutMs?: number): Promise<SeenDeltaRequest> {
    return this.waitFor(
      (r) => r.answers && kindOfTypeUrl(r.type_url) === kind && !!r.error_detail === nack,
      timeoutMs,
      from,
    );
  }

  protected onRequest(conn: Conn, request: DeltaDiscoveryRequest): void {
    const fixed = RESOURCE_KINDS.find(
      (k) => DELTA_METHODS.V2[k] === conn.method || DELTA_METHODS.V3[k] === conn.method,
    );
    const kind = kindOfTypeUrl(request.type_url) ?? fixed;
    let sub = kind ? conn.subs.get(kind) : undefined;
    const answers = !!sub && request.response_nonce !== '' && request.response_nonce === sub.nonce;
    this.seen({ ...request, stream: conn.id, method: conn.method, answers });
    if (!kind) return;
    const subscribe = request.resource_names_subscribe;
    if (!sub) {
      const named = subscribe.filter((n) => n !== '*');
      sub = {
        names: subscribe.length === 0 || subscribe.includes('*') ? null : new Set(named),
        held: new Map(Object.entries(request.initial_resource_versions ?? {})),
        nonce: '',
        typeUrl: request.type_url || TYPE_URLS.V3[kind],
      };
      conn.subs.set(kind, sub);
      this.push(conn, kind);
      return;
    }
    for (const name of request.resource_names_unsubscribe) {
      sub.names?.delete(name);
      sub.held.delete(name);
    }
    if (subscribe.length > 0 && sub.names) {
      for (const name of subscribe) sub.names.add(name);
      this.push(conn, kind);
    }
  }

  /** Sends a stream what it subscribed to and does not hold at its version, and what it held that is gone. */
  private push(conn: Conn, kind: ResourceKind): void {
    const sub = conn.subs.get(kind);
    const items = this.resources.get(kind);
    if (!sub || !items) return;
    const changed: JsonObject[] = [];
    for (const [name, item] of items) {
      if (sub.names && !sub.names.has(name)) continue;
      if (sub.held.get(name) !== versionOfResource(item)) changed.push(item);
    }
    const removed = [...sub.held.keys()].filter((name) => !items.has(name));
    if (changed.length === 0 && removed.length === 0) return;
    const version = sub.typeUrl === TYPE_URLS.V2[kind] ? 'V2' : 'V3';
    sub.nonce = String(this.nextNonce++);
    for (const item of changed) sub.held.set(nameOf(kind, item), versionOfResource(item));
    for (const name of removed) sub.held.delete(name);
    const names = changed.map((i) => nameOf(kind, i));
    this.responses.push({
      stream: conn.id,
      typeUrl: TYPE_URLS[version][kind],
      nonce: sub.nonce,
      names,
      removed,
    });
    conn.call.write({
      system_version_info: this.systemVersion,
      resources: changed.map((item) => ({
        name: nameOf(kind, item),
        version: versionOfResource(item),
        resource: wireResource(kind, item, version),
        aliases: [],
      })),
      type_url: TYPE_URLS[version][kind],
      nonce: sub.nonce,
      removed_resources: removed,
    });
  }
}
