/**
 * A small state-of-the-world xDS management server for tests: ADS and the per-type services,
 * v2 and v3, on one gRPC port. Tests set resources (as proto3 JSON, the form a bootstrap is
 * written in) per kind; every stream subscribed to a kind gets the new state at once. Every
 * request is recorded, so tests can wait for an ACK or a NACK and read its `error_detail`.
 * Requests answering a nonce older than the last one sent on their stream are ignored.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import protobuf from 'protobufjs';
import { fieldOf } from '../../src/bootstrap/field-lookup.js';
import { messageType, typeForUrl } from '../../src/bootstrap/schema.js';
import {
  type DiscoveryRequest,
  type DiscoveryResponse,
  kindOfTypeUrl,
  MESSAGE_OF,
  METHODS,
  RESOURCE_KINDS,
  type ResourceKind,
  TYPE_URLS,
  type WireResource,
} from '../../src/edges/xds/types.js';
import { decodeRequest, encodeResponse } from '../../src/edges/xds/wire.js';
import { DiscoveryStreams, type Stream } from './discovery-streams.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** One request as the server saw it, with the stream it came on. */
export interface SeenRequest extends DiscoveryRequest {
  stream: number;
  method: string;
  /** True when the request answered a response (its nonce was the last one sent). */
  answers: boolean;
}

const WRAPPERS = new Set([
  'Double',
  'Float',
  'Int64',
  'UInt64',
  'Int32',
  'UInt32',
  'Bool',
  'String',
  'Bytes',
]);

function jsonValue(json: Json): Record<string, unknown> {
  if (json === null) return { nullValue: 0 };
  if (typeof json === 'number') return { numberValue: json };
  if (typeof json === 'string') return { stringValue: json };
  if (typeof json === 'boolean') return { boolValue: json };
  if (Array.isArray(json)) return { listValue: { values: json.map(jsonValue) } };
  return {
    structValue: { fields: Object.fromEntries(Object.entries(json).map(([k, v]) => [k, jsonValue(v)])) },
  };
}

/** proto3 JSON (durations as strings, `Any` with `@type`, bare wrappers) to a protobufjs object. */
export function messageFromJson(type: protobuf.Type, json: Json): Record<string, unknown> {
  const name = type.fullName;
  if (name === '.google.protobuf.Duration') {
    const m = /^(\d+)(?:\.(\d{1,9}))?s$/.exec(String(json));
    if (!m) throw new Error(`bad duration ${JSON.stringify(json)}`);
    return { seconds: Number(m[1]), nanos: m[2] ? Number(m[2].padEnd(9, '0')) : 0 };
  }
  if (name === '.google.protobuf.Any') {
    const { '@type': url, ...rest } = json as JsonObject;
    const inner = typeForUrl(String(url));
    if (!inner) throw new Error(`unknown @type ${String(url)}`);
    const body = inner.fullName.startsWith('.google.protobuf.') ? (rest.value as Json) : rest;
    return { type_url: url, value: inner.encode(inner.fromObject(messageFromJson(inner, body))).finish() };
  }
  if (name === '.google.protobuf.Struct')
    return (jsonValue(json).structValue ?? {}) as Record<string, unknown>;
  if (name === '.google.protobuf.Value') return jsonValue(json);
  if (name.startsWith('.google.protobuf.') && WRAPPERS.has(name.slice(17, -5))) return { value: json };
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(json as JsonObject)) {
    const field = fieldOf(type, key);
    if (!field) throw new Error(`${name} has no field ${key}`);
    const resolved = field.resolve().resolvedType;
    const convert = (v: Json) => (resolved instanceof protobuf.Type ? messageFromJson(resolved, v) : v);
    if (field.map)
      out[field.name] = Object.fromEntries(
        Object.entries(value as JsonObject).map(([k, v]) => [k, convert(v)]),
      );
    else if (field.repeated) out[field.name] = (Array.isArray(value) ? value : [value]).map(convert);
    else out[field.name] = convert(value);
  }
  return out;
}

/** A resource as the server sends it: the v2 message's bytes under the version's type URL. */
export function wireResource(
  kind: ResourceKind,
  json: JsonObject,
  version: 'V2' | 'V3' = 'V2',
): WireResource {
  const type = messageType(MESSAGE_OF[kind]);
  const value = type.encode(type.fromObject(messageFromJson(type, json))).finish();
  return { type_url: TYPE_URLS[version][kind], value };
}

const nameOf = (kind: ResourceKind, json: JsonObject) =>
  String(kind === 'eds' ? json.cluster_name : json.name);

interface Sub {
  names: string[];
  /** Last nonce sent for the type on this stream. */
  nonce: string;
  typeUrl: string;
}

type Conn = Stream<DiscoveryRequest, DiscoveryResponse, Sub>;

export class XdsServer extends DiscoveryStreams<DiscoveryRequest, DiscoveryResponse, SeenRequest, Sub> {
  private readonly resources = new Map<ResourceKind, { version: string; items: Map<string, JsonObject> }>();
  private rest: http.Server | null = null;
  /** The last nonce sent over REST, per kind. */
  private readonly restNonces = new Map<ResourceKind, string>();
  /** A body to answer the next REST request of a kind with, as it is (`sendRawRest`). */
  private readonly restRaw = new Map<
    ResourceKind,
    { status: number; body: string | Buffer; served: (at: number) => void }
  >();
  /** Resources of the next responses are written with this version's type URLs. */
  wireVersion: 'V2' | 'V3' = 'V2';
  /** Answer each NACK with the same response again, as go-control-plane does (a rejection storm). */
  resendOnNack = false;

  /** Listens on 127.0.0.1 (`port` 0 picks one; a restart passes the old one). */
  static async start(port = 0): Promise<XdsServer> {
    const server = new XdsServer();
    await server.listen(port);
    return server;
  }

  listen(port: number): Promise<void> {
    return this.bind(port, METHODS, { decode: decodeRequest, encode: encodeResponse });
  }

  /** Listens on a unix socket (`path`), as Istio's agent serves its proxy's xDS. */
  static async startUnix(path: string): Promise<XdsServer> {
    const server = new XdsServer();
    await server.bind(0, METHODS, { decode: decodeRequest, encode: encodeResponse }, `unix:${path}`);
    return server;
  }

  /**
   * Serves the REST API too (`POST /v2/discovery:endpoints` and the like, JSON), on its own
   * port: 304 when the request already has the version, else the resources it names.
   */
  async startRest(): Promise<number> {
    const server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => {
        body += chunk;
      });
      req.on('end', () => this.onRest(req.url ?? '', body, res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.rest = server;
    return (server.address() as AddressInfo).port;
  }

  private onRest(url: string, body: string, res: http.ServerResponse): void {
    const paths: Record<string, ResourceKind> = {
      clusters: 'cds',
      endpoints: 'eds',
      listeners: 'lds',
      routes: 'rds',
    };
    const match = /^\/(v2|v3)\/discovery:(\w+)$/.exec(url);
    const kind = match ? paths[match[2]!] : undefined;
    if (!match || !kind) {
      res.writeHead(404).end();
      return;
    }
    const request = JSON.parse(body) as DiscoveryRequest;
    const answers = request.response_nonce !== '' && request.response_nonce === this.restNonces.get(kind);
    this.seen({
      ...request,
      resource_names: request.resource_names ?? [],
      stream: 0,
      method: `REST ${url}`,
      answers,
    });
    const raw = this.restRaw.get(kind);
    if (raw) {
      this.restRaw.delete(kind);
      res.writeHead(raw.status, { 'content-type': 'application/json' }).end(raw.body);
      raw.served(this.requests.length);
      return;
    }
    const state = this.resources.get(kind);
    if (!state || (request.version_info === state.version && !request.error_detail)) {
      res.writeHead(304).end();
      return;
    }
    const version = match[1] === 'v3' ? 'V3' : 'V2';
    const names = request.resource_names ?? [];
    const wildcard = (kind === 'cds' || kind === 'lds') && names.length === 0;
    const nonce = String(this.nextNonce++);
    this.restNonces.set(kind, nonce);
    const resources = [...state.items.values()]
      .filter((i) => wildcard || names.includes(nameOf(kind, i)))
      .map((i) => ({ '@type': TYPE_URLS[version][kind], ...i }));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({ version_info: state.version, resources, type_url: TYPE_URLS[version][kind], nonce }),
    );
  }

  /** Replaces every resource of a kind at `version` and pushes it to every subscriber. */
  set(kind: ResourceKind, items: JsonObject[], version: string): void {
    this.resources.set(kind, { version, items: new Map(items.map((i) => [nameOf(kind, i), i])) });
    for (const conn of this.conns) if (conn.subs.has(kind)) this.push(conn, kind);
  }

  /**
   * Answers the next REST request of `kind` with `body` as it is; resolves with the number of
   * requests seen when it was served, so the request after it answers it (its ACK or NACK).
   */
  sendRawRest(kind: ResourceKind, body: string | Buffer, status = 200): Promise<number> {
    return new Promise((served) => this.restRaw.set(kind, { status, body, served }));
  }

  protected describe(r: SeenRequest): string {
    return `${r.type_url} v=${r.version_info} n=${r.response_nonce} ${r.error_detail?.message ?? ''}`;
  }

  /** An ACK of `version` for `kind`. */
  ack(kind: ResourceKind, version: string, timeoutMs?: number): Promise<SeenRequest> {
    return this.waitFor(
      (r) => r.answers && kindOfTypeUrl(r.type_url) === kind && r.version_info === version && !r.error_detail,
      timeoutMs,
    );
  }

  /** A NACK for `kind` sent after request number `from`. */
  nack(kind: ResourceKind, timeoutMs?: number, from = 0): Promise<SeenRequest> {
    return this.waitFor(
      (r) => r.answers && kindOfTypeUrl(r.type_url) === kind && !!r.error_detail,
      timeoutMs,
      from,
    );
  }

  /** Stops at once: every stream is cut, as when a management server dies. */
  override async stop(): Promise<void> {
    await super.stop();
    this.rest?.closeAllConnections();
    this.rest?.close();
    this.rest = null;
  }

  protected onRequest(conn: Conn, request: DiscoveryRequest): void {
    const fixed = RESOURCE_KINDS.find((k) => METHODS.V2[k] === conn.method || METHODS.V3[k] === conn.method);
    const kind = kindOfTypeUrl(request.type_url) ?? fixed;
    const sub = kind ? conn.subs.get(kind) : undefined;
    const answers = !!sub && request.response_nonce !== '' && request.response_nonce === sub.nonce;
    this.seen({ ...request, stream: conn.id, method: conn.method, answers });
    if (!kind) return;
    // A request naming an older nonce was overtaken by a newer response: ignored.
    if (sub && request.response_nonce !== '' && request.response_nonce !== sub.nonce) return;
    const names = [...request.resource_names].sort();
    const changed = !sub || JSON.stringify(sub.names) !== JSON.stringify(names);
    conn.subs.set(kind, { names, nonce: sub?.nonce ?? '', typeUrl: request.type_url || TYPE_URLS.V2[kind] });
    // First request of a type, or new names: send the state. An ACK or NACK alone gets nothing
    // (unless `resendOnNack`).
    if (changed || request.response_nonce === '' || (this.resendOnNack && request.error_detail))
      this.push(conn, kind);
  }

  private push(conn: Conn, kind: ResourceKind): void {
    const state = this.resources.get(kind);
    const sub = conn.subs.get(kind);
    if (!state || !sub) return;
    const wildcard = kind === 'cds' || kind === 'lds' ? sub.names.length === 0 : false;
    const items = [...state.items.values()].filter((i) => wildcard || sub.names.includes(nameOf(kind, i)));
    const version = sub.typeUrl === TYPE_URLS.V3[kind] ? 'V3' : this.wireVersion;
    sub.nonce = String(this.nextNonce++);
    conn.call.write({
      version_info: state.version,
      resources: items.map((i) => wireResource(kind, i, version)),
      type_url: TYPE_URLS[version][kind],
      nonce: sub.nonce,
    });
  }
}
