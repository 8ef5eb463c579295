import type * as net from 'node:net';
import type * as tls from 'node:tls';
import type bunyan from 'bunyan';
import { runtimeValue } from '../../../reducers/runtime.js';
import { nodeSettings } from '../../../reducers/settings/node.js';
import { stringOr } from '../../../reducers/settings/values.js';
import type { Scope } from '../../stats/store.js';
import { type AccessLogger, startAccessLogs } from '../access-log/config.js';
import type { RuntimeLookup } from '../access-log/filters.js';
import { flagsText, type StreamInfo } from '../access-log/stream-info.js';
import { ERROR } from '../codec/h2/frames.js';
import type { ServerSession } from '../codec/h2/session.js';
import { guardedData } from '../codec/peer-guard.js';
import type { NetworkFilterHandler } from '../network-filter.js';
import { discoveredRoutes } from '../router/discovered.js';
import type { RouteTable } from '../router/table.js';
import { compiledBootstrapTracing } from '../tracing/config.js';
import { HttpTracer } from '../tracing/tracer.js';
import type { DownstreamOwner } from './downstream.js';
import type { StreamFilterMaker } from './filters/api.js';
import type { FilterChain } from './filters/chain.js';
import { startStreamFilters } from './filters/registry.js';
import { H1Downstream } from './h1-downstream.js';
import { H2Codec } from './h2-downstream.js';
import type { HcmSpec } from './hcm-config.js';
import { type LocalIdentity, localIdentity } from './headers.js';
import { fractionEnabled, randomDraw } from './runtime-fraction.js';
import { HcmStats } from './stats.js';
import type { HcmTimeouts } from './timeouts.js';
import type { HttpConnectionManagerDeps } from './types.js';

/** Without `normalize_path`, this runtime key (a percentage, default 0) turns normalization on. */
const NORMALIZE_PATH_DEFAULT = {
  key: 'http_connection_manager.normalize_path',
  numerator: 0,
  denominator: 100,
};

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
/**
 * How long (at most the drain time) a drained HTTP/1 connection may stay idle before it is
 * closed, and an HTTP/2 session has between its two GOAWAYs: long enough for a request the
 * client was sending to arrive and be served.
 */
const DRAIN_GRACE_MS = 1000;
/** The highest HTTP/2 stream ID: a GOAWAY naming it refuses no stream (RFC 9113, 6.8). */
const MAX_STREAM_ID = 2 ** 31 - 1;

/**
 * The HTTP connection manager network filter: owns downstream connections, picks the codec
 * (HTTP/1 on the raw socket, or HTTP/2 when the connection preface says so), and runs each
 * request through the filter chain and the router, as compiled by `compileHcm`.
 */
export class HttpConnectionManager implements NetworkFilterHandler, DownstreamOwner {
  readonly stats: HcmStats;
  readonly filters: FilterChain;
  /** One maker per per-request filter, in chain order; null for none (no per-request cost then). */
  readonly streamFilters: StreamFilterMaker[] | null;
  readonly tracer: HttpTracer | null;
  readonly log: bunyan;
  readonly runtime: RuntimeLookup;
  readonly serverName: string;
  readonly userAgentIdentity: LocalIdentity | null;
  /** The proxy's own address, appended to `x-forwarded-for` for a loopback peer (per `--local-address-ip-version`). */
  readonly localAddress: string;
  readonly maxRequestHeadersBytes: number;
  /** `normalize_path`, the runtime default decided when this connection manager was built, as the reference does. */
  readonly normalizePath: boolean;
  readonly timeouts: HcmTimeouts;
  /** What the filters registered for this connection manager's life, let go when it closes. */
  private readonly releases: Array<() => void> = [];
  private readonly accessLog: AccessLogger | null;
  private readonly upstreamLog: AccessLogger | null;
  private readonly codec: HcmSpec['codec'];
  draining = false;
  private drainStartedAt = 0;
  private drainTimeMs = 0;
  private drainTimer: NodeJS.Timeout | null = null;
  private h2: H2Codec | null = null;
  private readonly h1 = new Set<H1Downstream>();
  private readonly h2Sockets = new Set<net.Socket>();
  private readonly h2Sessions = new Set<ServerSession>();

  constructor(
    readonly spec: HcmSpec,
    readonly deps: HttpConnectionManagerDeps,
  ) {
    const scope = deps.ctx.stats.scope(`http.${spec.statPrefix}`);
    this.stats = new HcmStats(scope);
    this.filters = spec.filters;
    this.streamFilters = startStreamFilters(spec.filters.stream, {
      scope,
      runtime: (key) => runtimeValue(deps.ctx.store.state, key),
      clusters: deps.clusters,
      log: (component) => deps.ctx.log.get(component),
      localCluster: localIdentity(deps.ctx.options, deps.ctx.store.state.bootstrap?.config).cluster,
      listenerName: deps.listenerName,
      taps: deps.ctx.taps,
      onClose: (release) => this.releases.push(release),
    });
    this.log = deps.ctx.log.get('http');
    this.serverName = spec.serverName;
    this.runtime = (key) => runtimeValue(deps.ctx.store.state, key);
    this.userAgentIdentity = spec.addUserAgent
      ? localIdentity(deps.ctx.options, deps.ctx.store.state.bootstrap?.config)
      : null;
    this.localAddress = deps.ctx.options.localAddressIpVersion === 'v6' ? '::1' : '127.0.0.1';
    this.maxRequestHeadersBytes = spec.maxRequestHeadersBytes;
    this.normalizePath =
      spec.normalizePath ??
      fractionEnabled(NORMALIZE_PATH_DEFAULT, (key) => runtimeValue(deps.ctx.store.state, key), randomDraw());
    this.codec = spec.codec;
    this.timeouts = spec.timeouts;
    this.accessLog = startAccessLogs(spec.accessLogs, deps.ctx);
    this.upstreamLog = startAccessLogs(spec.filters.upstreamLogs, deps.ctx);
    this.tracer = startTracer(spec, deps, scope);
  }

  /** Called once by each exchange when it is over: access logs and the per-request debug line. */
  onStreamEnd(info: StreamInfo): void {
    if (info.endedAt === 0) info.endedAt = performance.now();
    this.accessLog?.log(info);
    if (info.upstreamHost) this.upstreamLog?.log(info);
    if (this.log.debug()) {
      const req = info.request;
      this.log.debug(
        {
          method: req?.method,
          path: req?.path,
          status: info.responseCode,
          flags: flagsText(info.flags),
          upstream: info.upstreamHost || undefined,
          ms: Math.round(info.endedAt - info.startedAt),
        },
        'request done',
      );
    }
  }

  /**
   * The route table for a new request: the inline one, or with `rds` the discovered table of
   * the latest snapshot (swapped whole by each accepted update).
   */
  get routes(): RouteTable {
    const name = this.spec.rdsName;
    return name === null ? this.spec.routes : discoveredRoutes(this.deps.ctx.store.state, name);
  }

  get connectionIdleMs(): number {
    return this.timeouts.connectionIdleMs;
  }

  handle(socket: net.Socket): void {
    const s = this.stats;
    s.cxTotal.inc();
    s.cxActive.inc();
    if ((socket as tls.TLSSocket).encrypted) {
      s.cxSslTotal.inc();
      s.cxSslActive.inc();
      socket.once('close', () => s.cxSslActive.dec());
    }
    if (this.codec === 'HTTP1' || this.codec === 'HTTP2') {
      if (this.codec === 'HTTP1') this.startH1(socket, null);
      else this.startH2(socket, null);
      return;
    }
    this.sniff(socket);
  }

  /**
   * Reads the first bytes until they show the HTTP/2 preface or not. Until then the connection
   * is the manager's: a peer that closes (a TCP probe, `nc -z`) or sends nothing for
   * `idle_timeout` is closed here, as the reference's idle timer runs from the accept.
   */
  private sniff(socket: net.Socket): void {
    const openedAt = performance.now();
    let seen: Buffer | null = null;
    const idleMs = this.timeouts.connectionIdleMs;
    const idle =
      idleMs > 0
        ? setTimeout(() => {
            this.stats.cxIdleTimeout.inc();
            socket.destroy();
          }, idleMs).unref()
        : null;
    // The first bytes of every request on a new connection pass here: guarded like later reads.
    const sniff = guardedData(socket, 'http read', (chunk) => {
      seen = seen ? Buffer.concat([seen, chunk]) : chunk;
      const n = Math.min(seen.length, PREFACE.length);
      const isH2 = seen.compare(PREFACE, 0, n, 0, n) === 0;
      if (isH2 && n < PREFACE.length) return;
      stop();
      if (isH2) this.startH2(socket, seen);
      else this.startH1(socket, seen);
    });
    // The peer's FIN before a request: nothing to answer (the socket is half-open, not closed).
    const ended = () => socket.destroy();
    const closed = () => {
      stop();
      this.onConnectionClosed(null, openedAt, false);
    };
    const stop = () => {
      if (idle) clearTimeout(idle);
      socket.removeListener('data', sniff);
      socket.removeListener('end', ended);
      socket.removeListener('close', closed);
    };
    socket.on('data', sniff);
    socket.on('end', ended);
    socket.on('close', closed);
    socket.on('error', () => {});
  }

  private startH1(socket: net.Socket, first: Buffer | null): void {
    this.stats.cxHttp1Total.inc();
    this.stats.cxHttp1Active.inc();
    const conn = new H1Downstream(this, socket);
    this.h1.add(conn);
    if (first) conn.onData(first);
  }

  private startH2(socket: net.Socket, first: Buffer | null): void {
    this.stats.cxHttp2Total.inc();
    this.stats.cxHttp2Active.inc();
    this.h2 ??= new H2Codec(this);
    this.h2Sockets.add(socket);
    const openedAt = performance.now();
    socket.on('close', () => {
      this.h2Sockets.delete(socket);
      this.stats.cxHttp2Active.dec();
      this.onConnectionClosed(null, openedAt, true);
    });
    // HTTP/2 has no half-close: a peer's FIN ends the session, as in the reference.
    socket.allowHalfOpen = false;
    this.h2.accept(socket, first);
  }

  /** Called by the HTTP/2 codec for each new session, so drains can send it GOAWAY. */
  trackSession(session: ServerSession): void {
    this.h2Sessions.add(session);
    session.socket.once('close', () => this.h2Sessions.delete(session));
    if (this.draining) this.goAway(session);
  }

  /** Bookkeeping when a downstream connection is gone. */
  onConnectionClosed(conn: H1Downstream | null, openedAt: number, _h2: boolean): void {
    const s = this.stats;
    if (conn) {
      this.h1.delete(conn);
      s.cxHttp1Active.dec();
    }
    s.cxActive.dec();
    s.cxDestroy.inc();
    s.cxLengthMs.record(Math.round(performance.now() - openedAt));
  }

  /**
   * While draining, whether this response should close its connection: always with the
   * `immediate` strategy; with `gradual`, with a probability rising from 0 to 1 over the
   * drain time.
   */
  shouldDrainClose(): boolean {
    if (!this.draining) return false;
    if (this.drainTimeMs <= 0) return true;
    return Math.random() * this.drainTimeMs < performance.now() - this.drainStartedAt;
  }

  drain(strategy: 'gradual' | 'immediate', drainTimeMs: number): void {
    if (this.draining) return;
    this.draining = true;
    this.drainStartedAt = performance.now();
    this.drainTimeMs = strategy === 'immediate' ? 0 : drainTimeMs;
    for (const session of this.h2Sessions) this.goAway(session);
    for (const conn of [...this.h1]) conn.drainClose(Math.min(DRAIN_GRACE_MS, this.drainTimeMs));
    // Anything still open when the drain time is over closes once its response is done.
    if (this.drainTimeMs > 0) {
      this.drainTimer = setTimeout(() => {
        this.drainTimeMs = 0;
      }, this.drainTimeMs);
      this.drainTimer.unref();
    }
  }

  /**
   * Sends GOAWAY and closes the session once its open streams finish. With a drain time, a
   * first GOAWAY naming the highest stream ID tells the client to open no more streams while
   * those already on their way are still served; the final one (the last stream processed)
   * follows the grace later, as RFC 9113 (6.8) advises. A single GOAWAY would refuse a stream
   * the client opened as it was sent.
   */
  private goAway(session: ServerSession): void {
    if (session.closed) return;
    this.stats.cxDrainClose.inc();
    const graceMs = Math.min(DRAIN_GRACE_MS, this.drainTimeMs);
    if (graceMs <= 0) {
      session.close();
      return;
    }
    session.goaway(ERROR.NO_ERROR, MAX_STREAM_ID);
    setTimeout(() => session.close(), graceMs).unref();
  }

  async close(): Promise<void> {
    if (this.drainTimer) clearTimeout(this.drainTimer);
    const waits: Promise<void>[] = [];
    for (const conn of [...this.h1]) {
      waits.push(new Promise((resolve) => conn.socket.once('close', () => resolve())));
      conn.destroy();
    }
    for (const socket of [...this.h2Sockets]) {
      waits.push(new Promise((resolve) => socket.once('close', () => resolve())));
      socket.destroy();
    }
    await Promise.all(waits);
    for (const release of this.releases) release();
    // After the last exchange ended: its line is written before the file is let go.
    this.accessLog?.release();
    this.upstreamLog?.release();
    // After the last exchange ended too: its span goes in the final report.
    await this.tracer?.close();
  }
}

/**
 * The connection manager's tracer: its `tracing.provider`, else the bootstrap's `tracing.http`
 * (validated with the bootstrap; compiled again here, where the snapshot holds it); null when
 * `tracing` is unset or no tracer is configured, as the reference's null tracer.
 */
function startTracer(spec: HcmSpec, deps: HttpConnectionManagerDeps, scope: Scope): HttpTracer | null {
  if (spec.tracing === null) return null;
  const config = deps.ctx.store.state.bootstrap?.config;
  const tracer = spec.tracing.provider ?? compiledBootstrapTracing(config);
  if (tracer === null) return null;
  const identity = localIdentity(deps.ctx.options, config);
  return new HttpTracer(spec.tracing, tracer, {
    clusters: deps.clusters,
    stats: deps.ctx.stats,
    hcmScope: scope,
    runtime: (key) => runtimeValue(deps.ctx.store.state, key),
    local: {
      ...identity,
      zone: deps.ctx.options.serviceZone || stringOr(nodeSettings(config).locality.zone, ''),
    },
  });
}
