import { createRequire } from 'node:module';
import type * as Grpc from '@grpc/grpc-js';
import type bunyan from 'bunyan';
import type { DiscoveryRequest, DiscoveryResponse, Subscriber, Transport } from './types.js';
import { decodeResponse, encodeRequest } from './wire.js';

/** `google.rpc.Code.INVALID_ARGUMENT`: the code of a NACK's `error_detail`, as the reference sends. */
const INVALID_ARGUMENT = 3;
const BACKOFF_BASE_MS = 500;
const BACKOFF_MAX_MS = 30_000;

let grpcModule: typeof Grpc | null = null;

/**
 * The wait before redial number `failures` (1, 2, ...) of a management stream: jittered
 * exponential, 0.5 s doubling to 30 s, each wait between half and all of its ceiling.
 */
export function backoffMs(failures: number): number {
  const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** (failures - 1));
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
}

/**
 * `@grpc/grpc-js`, loaded on the first dial rather than imported: a server whose config
 * names no gRPC management server never holds it (about 2.7 MB of heap).
 */
export function grpc(): typeof Grpc {
  grpcModule ??= createRequire(import.meta.url)('@grpc/grpc-js') as typeof Grpc;
  return grpcModule;
}

/** A timer that does not keep the process up: a redial or re-read is no reason to stay alive. */
export function unrefTimeout(ms: number, fn: () => void): NodeJS.Timeout {
  const timer = setTimeout(fn, ms);
  timer.unref();
  return timer;
}

/**
 * Ends a management stream for good: its listeners go first, so its own end reports no
 * failure, and a late error is swallowed; then the call is cancelled and the channel closed.
 */
export function endCall<Req, Res>(
  call: Grpc.ClientDuplexStream<Req, Res> | null,
  client: Grpc.Client | null,
): void {
  call?.removeAllListeners();
  call?.on('error', () => {});
  call?.cancel();
  client?.close();
}

interface Watch {
  typeUrl: string;
  /** null: every resource of the type (CDS, LDS). */
  names: string[] | null;
  /** `version_info` of the last accepted response: what a NACK and a re-subscription send. */
  version: string;
  /** Nonce of the last response on this connection; empty after a reconnect. */
  nonce: string;
  subscriber: Subscriber;
  /** A request of the watch waits for a token (`rate_limit_settings`), with its error if a NACK. */
  queued: { error: string | null } | null;
}

/** `rate_limit_settings`: a token bucket on the requests of a stream. */
export interface RateLimit {
  maxTokens: number;
  /** Tokens added per second. */
  fillRate: number;
}

/** What a stream counts, as the reference's `control_plane.*` stats. */
export interface StreamCounters {
  /** `control_plane.rate_limit_enforced`: a request held for a token. */
  rateLimitEnforced: { inc(): void };
  /** `control_plane.pending_requests`: requests waiting for a token now. */
  pendingRequests: { set(value: number): void };
}

export interface StreamOptions {
  /** The method path (`/envoy.service.discovery.v2.AggregatedDiscoveryService/...`). */
  method: string;
  /** The management server to dial now (`ip:port`), null while its cluster has no member. */
  target: () => string | null;
  node: Record<string, unknown>;
  nodeOnFirstOnly: boolean;
  log: bunyan;
  /**
   * The stream is up (its channel connected, or a response arrived) or not (it broke or was
   * never dialled), for `control_plane.connected_state`.
   */
  onConnected: (connected: boolean) => void;
  rateLimit?: RateLimit | null;
  counters?: StreamCounters;
}

/**
 * One state-of-the-world xDS stream: one type (a per-type service) or several (ADS). Each
 * type has its own version and nonce; every response is answered with an ACK (its version
 * and nonce) or a NACK (the last accepted version, its nonce, and `error_detail`). A broken
 * stream is redialled with jittered exponential backoff and every watch re-sent with the
 * versions accepted so far. Each break (or a dial with no member to dial) is a failed fetch
 * of every type watched.
 */
export class XdsStream implements Transport {
  private readonly watches = new Map<string, Watch>();
  private client: Grpc.Client | null = null;
  private call: Grpc.ClientDuplexStream<DiscoveryRequest, DiscoveryResponse> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private failures = 0;
  private sentNode = false;
  private closed = false;
  /** `rate_limit_settings`: tokens left, when they were last counted, the wait for the next. */
  private tokens = 0;
  private countedAt = -1;
  private drainTimer: NodeJS.Timeout | null = null;

  constructor(private readonly options: StreamOptions) {}

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
    const watch: Watch = { typeUrl, names: sorted, version: '', nonce: '', subscriber, queued: null };
    this.watches.set(typeUrl, watch);
    subscriber.onAttempt();
    if (this.call) this.send(watch);
    else this.connectSoon(0);
  }

  /** Stops watching a type: the server is told the type's names are now none. */
  unwatch(typeUrl: string): void {
    const watch = this.watches.get(typeUrl);
    if (!watch) return;
    this.watches.delete(typeUrl);
    if (watch.names !== null) this.send({ ...watch, names: [] });
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.hangUp();
  }

  private hangUp(): void {
    endCall(this.call, this.client);
    this.call = null;
    this.client = null;
    if (this.drainTimer) clearTimeout(this.drainTimer);
    this.drainTimer = null;
    for (const watch of this.watches.values()) watch.queued = null;
    this.options.counters?.pendingRequests.set(0);
  }

  private connectSoon(delayMs: number): void {
    if (this.closed || this.timer || this.call) return;
    this.timer = unrefTimeout(delayMs, () => {
      this.timer = null;
      this.connect();
    });
  }

  private connect(): void {
    if (this.closed || this.watches.size === 0) return;
    const target = this.options.target();
    if (!target) {
      this.failed('the management cluster has no member');
      return;
    }
    const { Client, credentials } = grpc();
    const client = new Client(target, credentials.createInsecure());
    const call = client.makeBidiStreamRequest(this.options.method, encodeRequest, decodeResponse);
    this.client = client;
    this.call = call;
    this.sentNode = false;
    this.watchChannel(client, call);
    for (const watch of this.watches.values()) {
      watch.nonce = '';
      this.send(watch);
    }
    call.on('data', (response: DiscoveryResponse) => this.onResponse(response));
    call.on('error', (err: Grpc.ServiceError) => this.onEnd(call, `${err.code}: ${err.details}`));
    call.on('end', () => this.onEnd(call, 'stream ended by the server'));
  }

  /**
   * `control_plane.connected_state` follows the stream, as the reference's: up once its channel
   * is connected (before any response: a management server may have nothing to push yet),
   * down when the stream ends.
   */
  private watchChannel(
    client: Grpc.Client,
    call: Grpc.ClientDuplexStream<DiscoveryRequest, DiscoveryResponse>,
  ): void {
    const { connectivityState } = grpc();
    const channel = client.getChannel();
    const follow = (seen: Grpc.connectivityState) => {
      if (call !== this.call) return;
      if (seen === connectivityState.READY) this.options.onConnected(true);
      if (seen === connectivityState.SHUTDOWN) return;
      channel.watchConnectivityState(seen, Number.POSITIVE_INFINITY, () =>
        follow(channel.getConnectivityState(false)),
      );
    };
    follow(channel.getConnectivityState(true));
  }

  private onEnd(call: Grpc.ClientDuplexStream<DiscoveryRequest, DiscoveryResponse>, why: string): void {
    if (call !== this.call) return;
    this.hangUp();
    this.failed(why);
  }

  private failed(why: string): void {
    this.options.onConnected(false);
    for (const watch of this.watches.values()) watch.subscriber.onFailure(why);
    this.failures++;
    const delay = backoffMs(this.failures);
    this.options.log.warn(
      { method: this.options.method, retryInMs: delay },
      `xDS stream to ${this.options.target() ?? '(no member)'} closed: ${why}`,
    );
    this.connectSoon(delay);
  }

  private onResponse(response: DiscoveryResponse): void {
    this.failures = 0;
    this.options.onConnected(true);
    const watch = this.watches.get(response.type_url);
    if (!watch) {
      this.options.log.debug({ typeUrl: response.type_url }, 'xDS response for a type not watched');
      return;
    }
    watch.nonce = response.nonce;
    const error = watch.subscriber.onUpdate(response);
    if (error === null) watch.version = response.version_info;
    this.send(watch, error);
  }

  /**
   * Takes a token of `rate_limit_settings`' bucket (full at the start, refilled at its rate);
   * false when none is left. Without rate limiting every request goes.
   */
  private takeToken(): boolean {
    const limit = this.options.rateLimit;
    if (!limit) return true;
    const now = performance.now();
    this.tokens =
      this.countedAt < 0
        ? limit.maxTokens
        : Math.min(limit.maxTokens, this.tokens + ((now - this.countedAt) / 1000) * limit.fillRate);
    this.countedAt = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Sends the requests held for a token as tokens come, each as it is by then. */
  private drainSoon(): void {
    const limit = this.options.rateLimit;
    if (this.drainTimer || !limit) return;
    const waitMs = Math.max(1, Math.ceil(((1 - this.tokens) / limit.fillRate) * 1000));
    this.drainTimer = unrefTimeout(waitMs, () => {
      this.drainTimer = null;
      for (const watch of this.watches.values()) {
        if (!watch.queued) continue;
        if (!this.takeToken()) break;
        const { error } = watch.queued;
        watch.queued = null;
        this.write(watch, error);
      }
      this.countPending();
      if ([...this.watches.values()].some((w) => w.queued)) this.drainSoon();
    });
  }

  private countPending(): void {
    let pending = 0;
    for (const watch of this.watches.values()) if (watch.queued) pending++;
    this.options.counters?.pendingRequests.set(pending);
  }

  private send(watch: Watch, error: string | null = null): void {
    if (!this.call) return;
    if (watch.queued || !this.takeToken()) {
      // Held: a later request of the same type replaces it (it carries the newer version and nonce).
      watch.queued = { error };
      this.options.counters?.rateLimitEnforced.inc();
      this.countPending();
      this.drainSoon();
      return;
    }
    this.write(watch, error);
  }

  private write(watch: Watch, error: string | null): void {
    if (!this.call) return;
    const request: DiscoveryRequest = {
      version_info: watch.version,
      resource_names: watch.names ?? [],
      type_url: watch.typeUrl,
      response_nonce: watch.nonce,
    };
    if (!this.options.nodeOnFirstOnly || !this.sentNode) request.node = this.options.node;
    this.sentNode = true;
    if (error !== null) request.error_detail = { code: INVALID_ARGUMENT, message: error };
    this.call.write(request);
  }
}
