import { ManagementStream, type StreamOptions, type StreamWatch } from './grpc-stream.js';
import { type DiscoveryRequest, type DiscoveryResponse, judge, type Subscriber } from './types.js';
import { decodeResponse, encodeRequest } from './wire.js';

/** `google.rpc.Code.INVALID_ARGUMENT`: the code of a NACK's `error_detail`, as the reference sends. */
export const INVALID_ARGUMENT = 3;

interface Watch extends StreamWatch {
  /** null: every resource of the type (CDS, LDS). */
  names: string[] | null;
  /** `version_info` of the last accepted response: what a NACK and a re-subscription send. */
  version: string;
  /** Nonce of the last response on this connection; empty after a reconnect. */
  nonce: string;
  /** The rejection the next request carries (its NACK), once. */
  error: string | null;
}

/**
 * One state-of-the-world xDS stream. Each type has its own version and nonce; every response
 * is answered with an ACK (its version and nonce) or a NACK (the last accepted version, its
 * nonce, and `error_detail`). A redial re-sends every watch with the versions accepted so far.
 */
export class XdsStream extends ManagementStream<Watch, DiscoveryRequest, DiscoveryResponse> {
  constructor(options: StreamOptions) {
    super(options, { encode: encodeRequest, decode: decodeResponse });
  }

  /** Starts (or changes) the watch of one type; sent at once when the stream is up. */
  watch(typeUrl: string, names: string[] | null, subscriber: Subscriber): void {
    const existing = this.watches.get(typeUrl);
    const sorted = names ? [...names].sort() : null;
    if (existing) {
      existing.subscriber = subscriber;
      if (JSON.stringify(existing.names) === JSON.stringify(sorted)) return;
      existing.names = sorted;
      this.send(existing);
      return;
    }
    this.started({ typeUrl, names: sorted, version: '', nonce: '', error: null, subscriber, queued: false });
  }

  /** Stops watching a type: the server is told the type's names are now none. */
  unwatch(typeUrl: string): void {
    const watch = this.watches.get(typeUrl);
    if (!watch) return;
    this.watches.delete(typeUrl);
    if (watch.names !== null) this.writeRequest(this.requestOf({ ...watch, names: [], error: null }));
  }

  protected onDial(watch: Watch): void {
    watch.nonce = '';
    watch.error = null;
  }

  protected typeOf(response: DiscoveryResponse): string {
    return response.type_url;
  }

  protected onWatchResponse(watch: Watch, response: DiscoveryResponse): void {
    judge(watch.subscriber, response, (error) => {
      watch.nonce = response.nonce;
      if (error === null) watch.version = response.version_info;
      watch.error = error;
      this.send(watch);
    });
  }

  protected requestOf(watch: Watch): DiscoveryRequest {
    const request: DiscoveryRequest = {
      version_info: watch.version,
      resource_names: watch.names ?? [],
      type_url: watch.typeUrl,
      response_nonce: watch.nonce,
    };
    if (watch.error !== null) request.error_detail = { code: INVALID_ARGUMENT, message: watch.error };
    watch.error = null;
    return request;
  }
}
