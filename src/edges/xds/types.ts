/**
 * The xDS vocabulary: resource kinds, their type URLs and the gRPC methods that carry them,
 * in both API versions. The v3 messages have the v2 messages' field numbers, so one set of
 * message types (the loader's schema) decodes both.
 */
import type { DiscoveryKind } from '../../../events/discovery.js';
import type { ApiVersion } from '../../config/config-source.js';
import { peerFault } from '../../dataplane/codec/peer-guard.js';

/** The kinds of resource, as the discovery events name them. */
export type ResourceKind = DiscoveryKind;

export const RESOURCE_KINDS: readonly ResourceKind[] = ['cds', 'eds', 'lds', 'rds', 'sds'];

/** The message each kind decodes to, by its v2 name in the loader's schema. */
export const MESSAGE_OF: Record<ResourceKind, string> = {
  cds: 'envoy.api.v2.Cluster',
  eds: 'envoy.api.v2.ClusterLoadAssignment',
  lds: 'envoy.api.v2.Listener',
  rds: 'envoy.api.v2.RouteConfiguration',
  sds: 'envoy.api.v2.auth.Secret',
};

/** The short message name, as findings and rejected updates name a resource. */
export const RESOURCE_NAME: Record<ResourceKind, string> = {
  cds: 'Cluster',
  eds: 'ClusterLoadAssignment',
  lds: 'Listener',
  rds: 'RouteConfiguration',
  sds: 'Secret',
};

const PREFIX = 'type.googleapis.com/';

export const TYPE_URLS: Record<ApiVersion, Record<ResourceKind, string>> = {
  V2: {
    cds: `${PREFIX}envoy.api.v2.Cluster`,
    eds: `${PREFIX}envoy.api.v2.ClusterLoadAssignment`,
    lds: `${PREFIX}envoy.api.v2.Listener`,
    rds: `${PREFIX}envoy.api.v2.RouteConfiguration`,
    sds: `${PREFIX}envoy.api.v2.auth.Secret`,
  },
  V3: {
    cds: `${PREFIX}envoy.config.cluster.v3.Cluster`,
    eds: `${PREFIX}envoy.config.endpoint.v3.ClusterLoadAssignment`,
    lds: `${PREFIX}envoy.config.listener.v3.Listener`,
    rds: `${PREFIX}envoy.config.route.v3.RouteConfiguration`,
    sds: `${PREFIX}envoy.extensions.transport_sockets.tls.v3.Secret`,
  },
};

/** The kind a type URL names, in either version. */
export function kindOfTypeUrl(url: string): ResourceKind | undefined {
  for (const version of ['V2', 'V3'] as const) {
    for (const kind of RESOURCE_KINDS) if (TYPE_URLS[version][kind] === url) return kind;
  }
  return undefined;
}

/** The bidirectional state-of-the-world methods: ADS, and one service per kind. */
export const METHODS: Record<ApiVersion, Record<ResourceKind | 'ads', string>> = {
  V2: {
    ads: '/envoy.service.discovery.v2.AggregatedDiscoveryService/StreamAggregatedResources',
    cds: '/envoy.api.v2.ClusterDiscoveryService/StreamClusters',
    eds: '/envoy.api.v2.EndpointDiscoveryService/StreamEndpoints',
    lds: '/envoy.api.v2.ListenerDiscoveryService/StreamListeners',
    rds: '/envoy.api.v2.RouteDiscoveryService/StreamRoutes',
    sds: '/envoy.service.discovery.v2.SecretDiscoveryService/StreamSecrets',
  },
  V3: {
    ads: '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources',
    cds: '/envoy.service.cluster.v3.ClusterDiscoveryService/StreamClusters',
    eds: '/envoy.service.endpoint.v3.EndpointDiscoveryService/StreamEndpoints',
    lds: '/envoy.service.listener.v3.ListenerDiscoveryService/StreamListeners',
    rds: '/envoy.service.route.v3.RouteDiscoveryService/StreamRoutes',
    sds: '/envoy.service.secret.v3.SecretDiscoveryService/StreamSecrets',
  },
};

/** The incremental (delta) methods: ADS, and one service per kind, beside each state-of-the-world one. */
export const DELTA_METHODS: Record<ApiVersion, Record<ResourceKind | 'ads', string>> = {
  V2: {
    ads: '/envoy.service.discovery.v2.AggregatedDiscoveryService/DeltaAggregatedResources',
    cds: '/envoy.api.v2.ClusterDiscoveryService/DeltaClusters',
    eds: '/envoy.api.v2.EndpointDiscoveryService/DeltaEndpoints',
    lds: '/envoy.api.v2.ListenerDiscoveryService/DeltaListeners',
    rds: '/envoy.api.v2.RouteDiscoveryService/DeltaRoutes',
    sds: '/envoy.service.discovery.v2.SecretDiscoveryService/DeltaSecrets',
  },
  V3: {
    ads: '/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources',
    cds: '/envoy.service.cluster.v3.ClusterDiscoveryService/DeltaClusters',
    eds: '/envoy.service.endpoint.v3.EndpointDiscoveryService/DeltaEndpoints',
    lds: '/envoy.service.listener.v3.ListenerDiscoveryService/DeltaListeners',
    rds: '/envoy.service.route.v3.RouteDiscoveryService/DeltaRoutes',
    sds: '/envoy.service.secret.v3.SecretDiscoveryService/DeltaSecrets',
  },
};

/** A resource as it travels: an `Any`. */
export interface WireResource {
  type_url: string;
  value: Uint8Array;
}

export interface DiscoveryRequest {
  version_info: string;
  node?: Record<string, unknown>;
  resource_names: string[];
  type_url: string;
  response_nonce: string;
  error_detail?: { code: number; message: string };
}

export interface DeltaDiscoveryRequest {
  node?: Record<string, unknown>;
  type_url: string;
  resource_names_subscribe: string[];
  resource_names_unsubscribe: string[];
  /** The versions held, on the first request of a type on a new stream: the server sends only what changed. */
  initial_resource_versions: Record<string, string>;
  response_nonce: string;
  error_detail?: { code: number; message: string };
}

/** One resource of a delta response: its name and version beside the `Any`. */
export interface DeltaResource {
  name: string;
  version: string;
  resource: WireResource | null;
  aliases: string[];
}

export interface DeltaDiscoveryResponse {
  system_version_info: string;
  resources: DeltaResource[];
  type_url: string;
  nonce: string;
  removed_resources: string[];
}

/**
 * What a watch is handed: a DiscoveryResponse (or DeltaDiscoveryResponse) off a stream or a poll, or the content of a file
 * source, as it arrived (a REST body that is not JSON: the error of its parse). Nothing in it
 * is trusted: `decodeUpdate` reads its shape.
 */
export type Update = unknown;

/** The owner of a watch: told of each update to judge, and of each fetch that brought none. */
/**
 * A judgement: null accepts (the ACK), a message rejects (the NACK's detail); a promise of one
 * when it waits for something (a listener response for its binds).
 */
export type Judged = string | null | Promise<string | null>;

/**
 * Calls `then` with `subscriber`'s judgement of `update`: at once when it is made, else when it
 * is. A throw or a rejection while judging (a bug a management server's bytes reached) rejects
 * the update naming it, so it is NACKed, and is counted and logged as the data plane's read
 * guards do (docs/reliability.md, "The peer-input guard"): it ended the process.
 */
export function judge(subscriber: Subscriber, update: Update, then: (error: string | null) => void): void {
  let judged: Judged;
  try {
    judged = subscriber.onUpdate(update);
  } catch (err) {
    judged = failedJudging(err);
  }
  if (judged instanceof Promise) void judged.then(then, (err: unknown) => then(failedJudging(err)));
  else then(judged);
}

function failedJudging(err: unknown): string {
  peerFault(err, 'xDS update', null);
  return `internal error while applying the update: ${err instanceof Error ? err.message : String(err)}`;
}

export interface Subscriber {
  /** Judges an update: null accepts it (the ACK), a message rejects it whole (the NACK's detail). */
  onUpdate(update: Update): Judged;
  /** A fetch that brought nothing to judge: a stream broken or not dialled, a failed request, a file that does not parse. */
  onFailure(why: string): void;
  /** A fetch with no outcome to count (a gRPC subscription sent, a REST poll answered 304), which the reference counts as an attempt. */
  onAttempt(): void;
}

/** A way resources arrive: a gRPC stream (one type, or several on ADS), a REST poll, or a watched file. */
export interface Transport {
  watch(typeUrl: string, names: string[] | null, subscriber: Subscriber): void;
  unwatch(typeUrl: string): void;
  close(): void;
}

export interface DiscoveryResponse {
  version_info: string;
  resources: WireResource[];
  type_url: string;
  nonce: string;
}
