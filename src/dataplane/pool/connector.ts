import type * as net from 'node:net';
import { NO_SECRETS, type Secrets } from '../../config/secrets.js';
import type { UpstreamTls } from '../../config/tls-context.js';
import type { Counter, Scope } from '../../stats/store.js';
import { dial } from '../../tls/upstream.js';
import type { ClusterBuild, UpstreamHost } from '../../upstream/types.js';
import { guardedData, peerFault } from '../codec/peer-guard.js';
import { ReadViews } from '../codec/socket-reads.js';
import { type ConnectOptions, connectOptionsOf } from './connect-options.js';

/** How one caller wants its connection. */
export interface ConnectRequest {
  /** The HTTP/2 pool: ALPN offers `h2` on TLS. */
  http2?: boolean;
  /** Bytes may flow (after the TLS handshake and peer checks, if any). */
  onReady?: () => void;
  /** Keeps the writable side open after the peer's FIN (the TCP relay passes FINs on). */
  allowHalfOpen?: boolean;
  /**
   * Sizes the socket's buffers to `per_connection_buffer_limit_bytes` (the TCP relay); HTTP
   * pools keep Node's defaults and bound bodies in the exchange.
   */
  bufferLimit?: boolean;
  /**
   * Takes the received bytes instead of `data` events. On a plain TCP connection they are
   * read into one buffer shared by every such connection (`transient`: the bytes are valid
   * only during the call, so whatever is kept must be copied), which skips Node's `Readable`
   * and a buffer per read; on TLS they come from the socket's `data` events.
   */
  onRead?: (chunk: Buffer, transient: boolean) => void;
}

/** Where plain upstream connections with `onRead` receive; one read at a time on this thread. */
const readBuffer = Buffer.allocUnsafe(64 * 1024);
const views = new ReadViews(readBuffer);

/**
 * Opens a cluster's upstream connections the same way for the HTTP/1 pool, the HTTP/2 pool
 * and the TCP proxy: `upstream_bind_config` source address and port,
 * `upstream_connection_options.tcp_keepalive`, the cluster's TLS context, and
 * `connect_timeout` (counted as `upstream_cx_connect_timeout`, then the socket is destroyed,
 * so callers see a close before ready as for a refused connect). Built once per runtime of
 * the cluster, never per connection.
 */
export class Connector {
  readonly connectTimeoutMs: number;
  readonly bufferLimitBytes: number;
  private readonly scope: Scope;
  private readonly config: ClusterBuild['config'];
  private readonly secrets: () => Secrets;

  constructor(
    cluster: ClusterBuild,
    /** `upstream_cx_connect_timeout` of the cluster. */
    private readonly timeouts: Counter,
  ) {
    this.config = cluster.config;
    this.secrets = cluster.secrets ?? (() => NO_SECRETS);
    this.connectTimeoutMs = cluster.settings.connectTimeoutMs;
    this.bufferLimitBytes = cluster.settings.perConnectionBufferLimitBytes;
    this.scope = cluster.scope;
  }

  /**
   * The cluster's connect options with the secrets of now (two lookups while they are
   * unchanged): a rotated secret is used from the next connection on.
   */
  get options(): ConnectOptions {
    return connectOptionsOf(this.config, this.secrets());
  }

  /** The cluster's TLS context; null: plain text. */
  get tls(): UpstreamTls | null {
    return this.options.tls;
  }

  /** `common_http_protocol_options.idle_timeout` of the cluster (0: never). */
  get idleTimeoutMs(): number {
    return this.options.idleTimeoutMs;
  }

  connect(host: UpstreamHost, request: ConnectRequest = {}): net.Socket {
    const o = this.options;
    const halfOpen = request.allowHalfOpen === true;
    const onRead = request.onRead;
    let socketOptions: (net.SocketConstructorOpts & { highWaterMark?: number }) | undefined =
      halfOpen || request.bufferLimit
        ? {
            allowHalfOpen: halfOpen,
            ...(request.bufferLimit ? { highWaterMark: this.bufferLimitBytes } : {}),
          }
        : undefined;
    if (onRead && !o.tls) {
      const withRead: net.SocketConstructorOpts & { onread: net.OnReadOpts } = {
        ...socketOptions,
        onread: {
          buffer: readBuffer,
          callback: (n) => {
            try {
              onRead(views.of(n), true);
              return true;
            } catch (err) {
              peerFault(err, 'upstream read', socket);
              return false;
            }
          },
        },
      };
      socketOptions = withRead;
    }
    let ready = false;
    const socket = dial(
      {
        ip: host.ip,
        port: host.port,
        pipe: host.state.pipe === true,
        localAddress: o.localAddress,
        localPort: o.localPort,
        keepAlive: o.keepAlive,
        keepAliveInitialDelayMs: o.keepAliveInitialDelayMs,
        tls: o.tls,
        scope: this.scope,
        http2: request.http2 === true,
        socketOptions,
      },
      () => {
        ready = true;
        if (timer) clearTimeout(timer);
        request.onReady?.();
      },
    );
    const ms = this.connectTimeoutMs;
    const timer =
      ms > 0
        ? setTimeout(() => {
            if (ready) return;
            this.timeouts.inc();
            socket.destroy();
          }, ms)
        : null;
    if (timer) socket.once('close', () => clearTimeout(timer));
    if (onRead && o.tls)
      socket.on(
        'data',
        guardedData(socket, 'upstream read', (chunk) => onRead(chunk, false)),
      );
    return socket;
  }
}
