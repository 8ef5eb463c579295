/**
 * What every gRPC management stream shares, state of the world or delta: the dial (the next
 * member of the management cluster), `control_plane.connected_state`, redial with jittered
 * backoff, the node on the first request, and `rate_limit_settings`' token bucket on the
 * requests. A protocol says what a request of a watch is and what a response does.
 */
import type * as Grpc from '@grpc/grpc-js';
import type bunyan from 'bunyan';
import type { HostSpec } from '../../../events/index.js';
import { hostKey } from '../../../reducers/settings/endpoints.js';
import type { KeepaliveOptions } from '../../dataplane/codec/h2/keepalive.js';
import { channelCredentials, channelOptions, grpc } from './grpc-channel.js';
import type { ManagementSecurity, ManagementTls } from './management-tls.js';
import { probeSettings, type SettingsProbe } from './settings-probe.js';
import type { Subscriber, Transport } from './types.js';

const BACKOFF_BASE_MS = 500;
const BACKOFF_MAX_MS = 30_000;

/**
 * How long a dial may take to become a connection (TCP, then the server's HTTP/2 SETTINGS):
 * gRPC's MIN_CONNECT_TIMEOUT. grpc-js waits for the SETTINGS without a deadline, so a server
 * (or a load balancer in front of it) that accepts and says nothing held the stream for ever;
 * each dial is asked first (`probeSettings`).
 */
export const CONNECT_DEADLINE_MS = 20_000;

/**
 * The wait before redial number `failures` (1, 2, ...) of a management stream: jittered
 * exponential, 0.5 s doubling to 30 s, each wait between half and all of its ceiling.
 */
export function backoffMs(failures: number): number {
  const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** (failures - 1));
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
}

/** `initial_metadata` of a management server's `GrpcService`, as the headers of a new stream. */
export function streamMetadata(pairs: ReadonlyArray<readonly [string, string]>): Grpc.Metadata {
  const metadata = new (grpc().Metadata)();
  for (const [key, value] of pairs) metadata.add(key, value);
  return metadata;
}

/**
 * The gRPC target of a management server's member: `ip:port`, or for a unix socket (Istio's
 * `xds-grpc` and `sds-grpc` clusters are pipes to its agent) `unix:PATH` or `unix-abstract:NAME`.
 */
export function grpcTarget(host: Pick<HostSpec, 'ip' | 'port' | 'pipe'>): string {
  if (!host.pipe) return hostKey(host.ip, host.port);
  return host.ip.startsWith('@') ? `unix-abstract:${host.ip.slice(1)}` : `unix:${host.ip}`;
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
  call: Grpc.ClientDuplexStream<Req, Res> | Grpc.ClientWritableStream<Req> | null,
  client: Grpc.Client | null,
): void {
  call?.removeAllListeners();
  call?.on('error', () => {});
  call?.cancel();
  client?.close();
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
  /** How to dial it now: plain text, TLS with the secrets of the moment, or not yet (why). */
  security: () => ManagementSecurity;
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
  /** `initial_metadata`: headers of every stream. */
  metadata?: ReadonlyArray<readonly [string, string]>;
}

/** A `rate_limit_settings` bucket: full at the start, refilled at its rate. */
class TokenBucket {
  private tokens = 0;
  private countedAt = -1;

  constructor(private readonly limit: RateLimit) {}

  /** Takes a token; false when none is left. */
  take(): boolean {
    const now = performance.now();
    this.tokens =
      this.countedAt < 0
        ? this.limit.maxTokens
        : Math.min(this.limit.maxTokens, this.tokens + ((now - this.countedAt) / 1000) * this.limit.fillRate);
    this.countedAt = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** How long until the next token. */
  waitMs(): number {
    return Math.max(1, Math.ceil(((1 - this.tokens) / this.limit.fillRate) * 1000));
  }
}

/** What the shared machinery needs of a watch (one type URL on the stream). */
export interface StreamWatch {
  typeUrl: string;
  subscriber: Subscriber;
  /** A request of the watch waits for a token (`rate_limit_settings`); it is built when it goes. */
  queued: boolean;
}

/**
 * One management stream: one type (a per-type service) or several (ADS). A broken stream is
 * redialled with jittered exponential backoff and every watch re-sent (`onDial` says what each
 * one's first request on the new stream holds). Each break (or a dial with no member to dial)
 * is a failed fetch of every type watched.
 */
export abstract class ManagementStream<W extends StreamWatch, Req extends { node?: unknown }, Res>
  implements Transport
{
  protected readonly watches = new Map<string, W>();
  private client: Grpc.Client | null = null;
  private call: Grpc.ClientDuplexStream<Req, Res> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private failures = 0;
  private sentNode = false;
  private closed = false;
  private readonly bucket: TokenBucket | null;
  private drainTimer: NodeJS.Timeout | null = null;
  /** The dial's check that the server speaks HTTP/2, before grpc-js dials. */
  private probe: SettingsProbe | null = null;

  constructor(
    protected readonly options: StreamOptions,
    private readonly codec: { encode: (r: Req) => Buffer; decode: (b: Buffer) => Res },
  ) {
    this.bucket = options.rateLimit ? new TokenBucket(options.rateLimit) : null;
  }

  abstract watch(typeUrl: string, names: string[] | null, subscriber: Subscriber): void;
  abstract unwatch(typeUrl: string): void;
  /** A new stream: the watch's per-stream state (its nonce, what the server was told) starts over. */
  protected abstract onDial(watch: W): void;
  /** The watch's next request, as it is when it goes (a token may have held it); null: nothing to say. */
  protected abstract requestOf(watch: W): Req | null;
  /** The type URL a response is for. */
  protected abstract typeOf(response: Res): string;
  /** Judges a response of a watch (its subscriber) and sends the ACK or NACK. */
  protected abstract onWatchResponse(watch: W, response: Res): void;

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.hangUp();
  }

  protected get up(): boolean {
    return this.call !== null;
  }

  /** A new watch: dial, or send its first request on the stream that is up. */
  protected started(watch: W): void {
    this.watches.set(watch.typeUrl, watch);
    watch.subscriber.onAttempt();
    if (this.call) this.send(watch);
    else this.connectSoon(0);
  }

  private hangUp(): void {
    endCall(this.call, this.client);
    this.call = null;
    this.client = null;
    if (this.drainTimer) clearTimeout(this.drainTimer);
    this.drainTimer = null;
    this.probe?.cancel();
    this.probe = null;
    for (const watch of this.watches.values()) watch.queued = false;
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
    if (this.closed || this.watches.size === 0 || this.probe) return;
    const target = this.options.target();
    if (!target) {
      this.failed('the management cluster has no member');
      return;
    }
    const security = this.options.security();
    if ('error' in security) {
      this.failed(security.error);
      return;
    }
    this.probe = probeSettings(target, CONNECT_DEADLINE_MS, security.tls, (error) => {
      this.probe = null;
      if (this.closed || this.call) return;
      if (error) this.failed(error);
      else this.dial(target, security.tls, security.keepalive);
    });
  }

  private dial(target: string, tls: ManagementTls | null, keepalive: KeepaliveOptions | null): void {
    if (this.watches.size === 0) return;
    const { Client } = grpc();
    const client = new Client(target, channelCredentials(tls), channelOptions(keepalive));
    const call = client.makeBidiStreamRequest(
      this.options.method,
      this.codec.encode,
      this.codec.decode,
      streamMetadata(this.options.metadata ?? []),
    );
    this.client = client;
    this.call = call;
    this.sentNode = false;
    this.watchChannel(client, call);
    for (const watch of this.watches.values()) {
      this.onDial(watch);
      this.send(watch);
    }
    call.on('data', (response: Res) => this.onResponse(response));
    call.on('error', (err: Grpc.ServiceError) => this.onEnd(call, `${err.code}: ${err.details}`));
    call.on('end', () => this.onEnd(call, 'stream ended by the server'));
  }

  /**
   * `control_plane.connected_state` follows the stream, as the reference's: up once its channel
   * is connected (before any response: a management server may have nothing to push yet),
   * down when the stream ends.
   */
  private watchChannel(client: Grpc.Client, call: Grpc.ClientDuplexStream<Req, Res>): void {
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

  private onEnd(call: Grpc.ClientDuplexStream<Req, Res>, why: string): void {
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

  private onResponse(response: Res): void {
    this.failures = 0;
    this.options.onConnected(true);
    const typeUrl = this.typeOf(response);
    const watch = this.watches.get(typeUrl);
    if (!watch) {
      this.options.log.debug({ typeUrl }, 'xDS response for a type not watched');
      return;
    }
    this.onWatchResponse(watch, response);
  }

  /** Sends the watch's next request now, or once `rate_limit_settings` gives a token. */
  protected send(watch: W): void {
    if (!this.call) return;
    if (watch.queued || (this.bucket && !this.bucket.take())) {
      // Held: it is built when it goes, so it carries the newest version and nonce.
      watch.queued = true;
      this.options.counters?.rateLimitEnforced.inc();
      this.countPending();
      this.drainSoon();
      return;
    }
    this.write(watch);
  }

  /** Sends the requests held for a token as tokens come, each as it is by then. */
  private drainSoon(): void {
    const bucket = this.bucket;
    if (this.drainTimer || !bucket) return;
    this.drainTimer = unrefTimeout(bucket.waitMs(), () => {
      this.drainTimer = null;
      for (const watch of this.watches.values()) {
        if (!watch.queued) continue;
        if (!bucket.take()) break;
        watch.queued = false;
        this.write(watch);
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

  /** Writes a request as it is (an unwatched type's last words, which no watch holds). */
  protected writeRequest(request: Req): void {
    if (!this.call) return;
    if (!this.options.nodeOnFirstOnly || !this.sentNode) request.node = this.options.node;
    this.sentNode = true;
    this.call.write(request);
  }

  private write(watch: W): void {
    const request = this.requestOf(watch);
    if (request) this.writeRequest(request);
  }
}
