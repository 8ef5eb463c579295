import { ManagementStream, type StreamOptions, type StreamWatch } from './grpc-stream.js';
import { INVALID_ARGUMENT } from './stream.js';
import { type DeltaDiscoveryRequest, type DeltaDiscoveryResponse, judge, type Subscriber } from './types.js';
import { decodeDeltaResponse, encodeDeltaRequest } from './wire.js';

interface DeltaWatch extends StreamWatch {
  /** The names wanted; null: every resource of the type (CDS, LDS). */
  names: Set<string> | null;
  /** What the server was told on this stream: the names subscribed (null: wildcard), or nothing yet. */
  told: Set<string> | null | undefined;
  /** The version of each resource accepted: `initial_resource_versions` of the next stream. */
  versions: Map<string, string>;
  /** The response the next request answers (its ACK or NACK), once. */
  ack: { nonce: string; error: string | null } | null;
}

/** The name that subscribes to every resource of a type, in the v3 protocol. */
const WILDCARD = '*';

/**
 * One incremental (delta) xDS stream, v2 or v3, ADS or one type. Each type subscribes and
 * unsubscribes by name (a wildcard type, CDS or LDS, names `*` in v3, which a server serves
 * whether or not it keeps the legacy rule; in v2, which predates `*`, it names nothing, the
 * legacy wildcard); each response (the resources changed, each with its
 * version, and the names removed) is answered with an ACK of its nonce or a NACK with
 * `error_detail`; a redial tells the server the versions held (`initial_resource_versions`)
 * so it sends only what changed meanwhile.
 */
export class DeltaStream extends ManagementStream<DeltaWatch, DeltaDiscoveryRequest, DeltaDiscoveryResponse> {
  constructor(
    options: StreamOptions,
    /** v3: a wildcard subscription names `*`. */
    private readonly explicitWildcard: boolean,
  ) {
    super(options, { encode: encodeDeltaRequest, decode: decodeDeltaResponse });
  }

  /** Starts (or changes) the watch of one type: the server is told the names gained and lost. */
  watch(typeUrl: string, names: string[] | null, subscriber: Subscriber): void {
    const wanted = names ? new Set(names) : null;
    const existing = this.watches.get(typeUrl);
    if (!existing) {
      this.started({
        typeUrl,
        names: wanted,
        told: undefined,
        versions: new Map(),
        ack: null,
        subscriber,
        queued: false,
      });
      return;
    }
    existing.subscriber = subscriber;
    const before = existing.names;
    existing.names = wanted;
    // What is no longer wanted is no longer held: a later subscription starts from nothing.
    if (wanted)
      for (const name of existing.versions.keys()) if (!wanted.has(name)) existing.versions.delete(name);
    if (!sameNames(before, wanted)) this.send(existing);
  }

  /** Stops watching a type: the server is told its names are unsubscribed. */
  unwatch(typeUrl: string): void {
    const watch = this.watches.get(typeUrl);
    if (!watch) return;
    this.watches.delete(typeUrl);
    if (watch.told)
      this.writeRequest({
        type_url: typeUrl,
        resource_names_subscribe: [],
        resource_names_unsubscribe: [...watch.told].sort(),
        initial_resource_versions: {},
        response_nonce: '',
      });
  }

  protected onDial(watch: DeltaWatch): void {
    watch.told = undefined;
    watch.ack = null;
  }

  protected typeOf(response: DeltaDiscoveryResponse): string {
    return response.type_url;
  }

  protected onWatchResponse(watch: DeltaWatch, response: DeltaDiscoveryResponse): void {
    judge(watch.subscriber, response, (error) => {
      if (error === null) {
        for (const r of response.resources) watch.versions.set(r.name, r.version);
        for (const name of response.removed_resources) watch.versions.delete(name);
      }
      watch.ack = { nonce: response.nonce, error };
      this.send(watch);
    });
  }

  protected requestOf(watch: DeltaWatch): DeltaDiscoveryRequest | null {
    const first = watch.told === undefined;
    const told = watch.told ?? new Set<string>();
    const wildcard = first && this.explicitWildcard ? [WILDCARD] : [];
    const subscribe = watch.names ? [...watch.names].filter((n) => !told.has(n)).sort() : wildcard;
    const unsubscribe = watch.names ? [...told].filter((n) => !watch.names?.has(n)).sort() : [];
    const ack = watch.ack;
    if (!first && !ack && subscribe.length === 0 && unsubscribe.length === 0) return null;
    const request: DeltaDiscoveryRequest = {
      type_url: watch.typeUrl,
      resource_names_subscribe: subscribe,
      resource_names_unsubscribe: unsubscribe,
      initial_resource_versions: first ? Object.fromEntries(watch.versions) : {},
      response_nonce: ack?.nonce ?? '',
    };
    if (ack?.error != null) request.error_detail = { code: INVALID_ARGUMENT, message: ack.error };
    watch.told = watch.names ? new Set(watch.names) : null;
    watch.ack = null;
    return request;
  }
}

function sameNames(a: ReadonlySet<string> | null, b: ReadonlySet<string> | null): boolean {
  if (a === null || b === null) return a === b;
  if (a.size !== b.size) return false;
  for (const name of a) if (!b.has(name)) return false;
  return true;
}
