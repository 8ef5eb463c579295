import type * as net from 'node:net';
import type { Counter } from '../../stats/store.js';
import type { MetadataCriteria } from '../../upstream/lb/criteria.js';
import type { ClusterRuntime } from '../../upstream/types.js';
import type { AccessLogger } from '../access-log/config.js';
import { FLAG, joinHostPort, newStreamInfo } from '../access-log/stream-info.js';
import { guardedData } from '../codec/peer-guard.js';
import type { ClusterLookup } from '../http/types.js';
import { restoredDestination } from '../listeners/original-dst.js';
import type { ClusterTraffic, ConnectionCount } from '../pool/cluster-traffic.js';
import { localEnd } from '../pool/local-end.js';
import { tcpProxyCluster } from './cluster-override.js';
import { pickCluster, type TcpProxySettings } from './config.js';
import type { TcpProxyStats } from './stats.js';
import { upstreamObserver } from './upstream-observer.js';

/** What every session of one `tcp_proxy` filter shares. */
export interface TcpProxyShared {
  readonly settings: TcpProxySettings;
  readonly stats: TcpProxyStats;
  readonly clusters: ClusterLookup;
  readonly sessions: Set<TcpSession>;
  readonly accessLog: AccessLogger | null;
}

/** How long a flush-close waits for the peers to finish before dropping the sockets. */
const CLOSE_GRACE_MS = 1000;

/**
 * One downstream connection and the upstream connection it is relayed to. Reading from the
 * downstream waits until the upstream is connected; from then on bytes flow both ways with
 * backpressure (a side that cannot take more pauses the other), and a FIN from either side
 * is passed on as a FIN (half-close) instead of closing the whole pair.
 */
export class TcpSession {
  /** Name of the cluster and address of the host this session is connected to, once connected. */
  clusterName = '';
  /** The target's `metadata_match`, for subset balancing. */
  private criteria: MetadataCriteria | null = null;
  hostAddress = '';
  private upstream: net.Socket | null = null;
  private cluster: ClusterRuntime | null = null;
  private cx: ClusterTraffic | null = null;
  private closeTimer: NodeJS.Timeout | null = null;
  private upstreamConnected = false;
  private closingLocally = false;
  private done = false;
  /** What the access logs read when the session ends. */
  private readonly info = newStreamInfo(null, '', '');

  constructor(
    private readonly shared: TcpProxyShared,
    readonly downstream: net.Socket,
  ) {}

  start(): void {
    const { settings, stats, clusters, sessions } = this.shared;
    const downstream = this.downstream;
    downstream.pause();
    stats.downstream_cx_total.inc();
    sessions.add(this);
    downstream.on('error', () => {
      // The 'close' that follows tears the pair down; the error itself needs no handling.
    });
    downstream.once('close', (hadError) => this.onDownstreamClose(hadError));
    this.info.downstreamRemote = joinHostPort(downstream.remoteAddress, downstream.remotePort);
    this.info.downstreamDirectRemote = this.info.downstreamRemote;
    this.info.downstreamLocal = joinHostPort(downstream.localAddress, downstream.localPort);
    const named = tcpProxyCluster(downstream);
    const target = named === null ? pickCluster(settings, Math.random()) : null;
    this.clusterName = target?.name ?? (named as string);
    this.criteria = target ? target.criteria : settings.criteria;
    const cluster = clusters.get(this.clusterName);
    if (!cluster) {
      this.info.flags |= FLAG.NR;
      stats.downstream_cx_no_route.inc();
      downstream.destroy();
      return;
    }
    this.cluster = cluster;
    this.info.upstreamCluster = this.clusterName;
    this.cx = cluster.traffic;
    if (!this.cx.admitConnection()) {
      this.info.flags |= FLAG.UO;
      downstream.destroy();
      return;
    }
    this.connect(0);
  }

  /** Closes both sides, letting written data flush first. */
  close(): void {
    if (this.done) return;
    this.closingLocally = true;
    this.downstream.end();
    this.upstream?.end();
    this.closeTimer ??= setTimeout(() => this.destroy(), CLOSE_GRACE_MS);
    this.closeTimer.unref();
  }

  /** Drops both sides at once (idle timeout, unhealthy host, shutdown). */
  destroy(): void {
    this.closingLocally = true;
    this.downstream.destroy();
    this.upstream?.destroy();
  }

  private connect(attempt: number): void {
    const cluster = this.cluster as ClusterRuntime;
    const cx = this.cx as ClusterTraffic;
    const host = cluster.lb.choose({
      hash: null,
      attempt,
      criteria: this.criteria,
      originalDst: restoredDestination(this.downstream),
    });
    if (!host) {
      cx.cxNoneHealthy.inc();
      this.info.flags |= FLAG.UH;
      this.downstream.destroy();
      return;
    }
    this.hostAddress = host.address;
    this.info.upstreamHost = host.address;
    // The connector's connect_timeout destroys the socket: its close is the failed attempt.
    const upstream = cx.connector.connect(host, {
      allowHalfOpen: true,
      bufferLimit: true,
      onReady: () => onReady(),
    });
    this.upstream = upstream;
    const count = cx.beginConnection(host, 'tcp');
    this.upstreamConnected = false;
    let settled = false;
    const failed = () => {
      if (settled) return;
      settled = true;
      upstream.destroy();
      // A client that left while its upstream connected dropped the attempt: no upstream failed.
      if (this.downstream.destroyed) return;
      cx.cxConnectFail.inc();
      this.info.flags |= FLAG.UF;
      if (attempt + 1 < this.shared.settings.maxConnectAttempts) {
        this.connect(attempt + 1);
        return;
      }
      if (this.shared.settings.maxConnectAttempts > 1) {
        cx.cxConnectAttemptsExceeded.inc();
        this.info.flags |= FLAG.URX;
      }
      this.downstream.destroy();
    };
    upstream.on('error', failed);
    // A TLS peer refused by the checks is closed without an error: a failed connect all the same.
    upstream.once('close', failed);
    upstream.once('close', (hadError) => this.onUpstreamClose(upstream, count, hadError));
    const onReady = () => {
      if (settled) return;
      settled = true;
      this.upstreamConnected = true;
      this.info.upstreamLocal = localEnd(upstream);
      count.connected();
      this.onConnected(upstream);
    };
  }

  private onConnected(upstream: net.Socket): void {
    const { stats, settings } = this.shared;
    const cx = this.cx as ClusterTraffic;
    const downstream = this.downstream;
    relay(downstream, upstream, [stats.downstream_cx_rx_bytes_total, cx.cxTxBytes], {
      paused: stats.downstream_flow_control_paused_reading_total,
      resumed: stats.downstream_flow_control_resumed_reading_total,
    });
    relay(upstream, downstream, [cx.cxRxBytes, stats.downstream_cx_tx_bytes_total], {
      paused: cx.flowPaused,
      resumed: cx.flowResumed,
    });
    const observe = upstreamObserver(downstream);
    if (observe !== undefined) upstream.on('data', guardedData(upstream, 'tcp proxy upstream read', observe));
    if (settings.idleTimeoutMs > 0) {
      // A socket's timeout restarts on every read and write, and every relayed byte is read
      // from or written to the downstream, so one timer covers both directions.
      downstream.setTimeout(settings.idleTimeoutMs, () => {
        stats.idle_timeout.inc();
        this.destroy();
      });
    }
    downstream.resume();
  }

  private onDownstreamClose(hadError: boolean): void {
    const upstream = this.upstream;
    if (upstream && !upstream.destroyed) {
      if (!this.upstreamConnected) {
        this.info.flags |= FLAG.DC;
        this.closingLocally = true;
        upstream.destroy();
      } else if (hadError || this.closingLocally || !upstream.writable) {
        upstream.destroy();
      } else if (upstream.writableLength > 0) {
        // The client is gone but what it sent is still on its way to the upstream.
        const { upstream_flush_total, upstream_flush_active } = this.shared.stats;
        upstream_flush_total.inc();
        upstream_flush_active.inc();
        upstream.once('close', () => upstream_flush_active.dec());
        upstream.end(() => upstream.destroy());
      } else {
        upstream.end(() => upstream.destroy());
      }
    }
    this.finishIfDone();
  }

  private onUpstreamClose(upstream: net.Socket, count: ConnectionCount, hadError: boolean): void {
    const cx = this.cx as ClusterTraffic;
    count.end();
    (this.closingLocally ? cx.cxDestroyLocal : cx.cxDestroyRemote).inc();
    // A retry replaced this socket: the session goes on with the new one.
    if (upstream !== this.upstream) return;
    const downstream = this.downstream;
    if (!downstream.destroyed) {
      if (hadError) downstream.destroy();
      else downstream.end(() => downstream.destroy());
    }
    this.finishIfDone();
  }

  private finishIfDone(): void {
    if (this.done) return;
    if (!this.downstream.destroyed) return;
    if (this.upstream && !this.upstream.destroyed) return;
    this.done = true;
    if (this.closeTimer) clearTimeout(this.closeTimer);
    this.shared.sessions.delete(this);
    this.info.bytesReceived = this.downstream.bytesRead;
    this.info.bytesSent = this.downstream.bytesWritten;
    this.shared.accessLog?.log(this.info);
  }
}

/**
 * Copies `from` to `to`, pausing `from` while `to` holds more than its high-water mark
 * (the per-connection buffer limit), and passes `from`'s FIN on as `to`'s FIN.
 */
function relay(
  from: net.Socket,
  to: net.Socket,
  bytes: Counter[],
  flow: { paused: Counter; resumed: Counter },
): void {
  const resume = () => {
    flow.resumed.inc();
    from.resume();
  };
  from.on(
    'data',
    guardedData(from, 'tcp proxy read', (chunk) => {
      for (const c of bytes) c.add(chunk.length);
      if (!to.write(chunk)) {
        from.pause();
        flow.paused.inc();
        to.once('drain', resume);
      }
    }),
  );
  const passFin = () => {
    if (!to.destroyed) to.end();
  };
  // A FIN that came while the downstream waited for its upstream (a TCP probe) was already
  // emitted: a paused socket with nothing buffered ends at once.
  if (from.readableEnded) passFin();
  else from.once('end', passFin);
}
