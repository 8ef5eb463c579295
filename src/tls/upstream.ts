import * as net from 'node:net';
import * as tls from 'node:tls';
import type { JsonObject, RawCluster } from '../../events/index.js';
import { CONFIG_TYPE } from '../bootstrap/extensions.js';
import { Report } from '../bootstrap/report.js';
import type { Scope } from '../stats/store.js';
import { checkPeer, compileUpstreamTls, type UpstreamTls } from './context.js';
import { NO_SECRETS, type Secrets } from './secrets.js';
import { countFailure, countHandshake, sslStats } from './stats.js';
import { compileTransportTls } from './transport.js';

/** A cluster's TLS context (its TLS `transport_socket` or `tls_context`); null for plain text. */
export function compileClusterTls(
  cluster: JsonObject,
  path: string,
  report: Report,
  secrets: Secrets = NO_SECRETS,
): UpstreamTls | null {
  return compileTransportTls(cluster, path, report, secrets, CONFIG_TYPE.upstreamTls, compileUpstreamTls);
}

/** A cluster's TLS context as the secrets of the moment make it, and why a part could not be loaded. */
export interface ClusterTls {
  tls: UpstreamTls | null;
  errors: string[];
}

/** By the secrets (a rotated secret makes a new set), then by the cluster config. */
const made = new WeakMap<Secrets, WeakMap<RawCluster, ClusterTls>>();

/**
 * The TLS context the pools, the health checks and `/certs` use: compiled once per config and
 * set of secrets, by the step `compileCluster` ran on this config (its findings were reported there).
 */
export function clusterTls(cluster: RawCluster, secrets: Secrets): ClusterTls {
  const bySecrets = made.get(secrets) ?? new WeakMap<RawCluster, ClusterTls>();
  made.set(secrets, bySecrets);
  const hit = bySecrets.get(cluster);
  if (hit) return hit;
  const report = new Report('');
  const tls = compileClusterTls(cluster, `cluster '${cluster.name}'`, report, secrets);
  const out = { tls, errors: report.errors };
  bySecrets.set(cluster, out);
  return out;
}

/**
 * TLS sessions of each upstream OpenSSL context, newest first, at most `max_session_keys`: a
 * new connection offers the newest, as the reference's client does (any host of the
 * cluster). Keyed by the OpenSSL context, so a rotated certificate starts afresh.
 */
const sessions = new WeakMap<tls.SecureContext, Buffer[]>();

function keepSession(ctx: UpstreamTls, session: Buffer): void {
  const list = sessions.get(ctx.context) ?? [];
  list.unshift(session);
  list.length = Math.min(list.length, ctx.maxSessionKeys);
  sessions.set(ctx.context, list);
}

/** Where and how to open one upstream connection. */
export interface DialTarget {
  ip: string;
  port: number;
  localAddress: string | null;
  localPort: number;
  keepAlive: boolean;
  keepAliveInitialDelayMs: number;
  tls: UpstreamTls | null;
  /** The cluster's stats scope, for its `ssl.` counters. */
  scope: Scope;
  /** The pool speaks HTTP/2: ALPN offers `h2` (and only HTTP/1 pools drop it). */
  http2: boolean;
  socketOptions?: net.SocketConstructorOpts & { highWaterMark?: number };
}

/**
 * Opens an upstream connection, plain or TLS. `onReady` runs once bytes may flow: after the
 * TCP connect for plain text; after the handshake and the peer checks for TLS (a peer that
 * fails them is counted and the socket destroyed, so the caller sees a close before ready,
 * as for a refused connect).
 */
export function dial(target: DialTarget, onReady?: () => void): net.Socket {
  const raw = new net.Socket(target.socketOptions);
  const opts: net.TcpSocketConnectOpts = { host: target.ip, port: target.port };
  if (target.localAddress) {
    opts.localAddress = target.localAddress;
    if (target.localPort) opts.localPort = target.localPort;
  }
  // Set before connecting (applied once connected): `connect()` ignores its `keepAlive` and
  // `noDelay` options, which only the Socket constructor reads.
  raw.setNoDelay(true);
  if (target.keepAlive) raw.setKeepAlive(true, target.keepAliveInitialDelayMs);
  const ctx = target.tls;
  if (ctx && ctx.pending.length > 0) {
    // The reference's NotReadySslSocket: no handshake without the secrets SDS has yet to send.
    target.scope.counter('client_ssl_socket_factory.upstream_context_secrets_not_ready').inc();
    const why = `TLS secrets not ready (waiting for SDS: ${ctx.pending.join(', ')})`;
    process.nextTick(() => raw.destroy(new Error(why)));
    return raw;
  }
  raw.connect(opts);
  if (!ctx) {
    if (onReady) raw.once('connect', onReady);
    return raw;
  }
  const alpn = ctx.alpn.length > 0 ? ctx.alpn : target.http2 ? ['h2'] : [];
  const offered = target.http2 ? alpn : alpn.filter((p) => p !== 'h2');
  // node:tls passes these two on to the TLS socket; its typings omit them.
  const options: tls.ConnectionOptions & { allowHalfOpen: boolean; highWaterMark?: number } = {
    socket: raw,
    secureContext: ctx.context,
    ...(ctx.serverName ? { servername: ctx.serverName } : {}),
    ...(offered.length > 0 ? { ALPNProtocols: offered } : {}),
    ...(ctx.maxSessionKeys > 0 && sessions.get(ctx.context)?.[0]
      ? { session: sessions.get(ctx.context)?.[0] }
      : {}),
    // Verification is ours (checkPeer): the chain only when trusted_ca is set, never the host name.
    rejectUnauthorized: false,
    checkServerIdentity: () => undefined,
    allowHalfOpen: target.socketOptions?.allowHalfOpen === true,
    ...(target.socketOptions?.highWaterMark ? { highWaterMark: target.socketOptions.highWaterMark } : {}),
  };
  const socket = tls.connect(options);
  const stats = sslStats(target.scope);
  let tcpUp = false;
  let secured = false;
  // A session is kept only from a peer that passed the checks (TLS 1.2 sends it before).
  const early: Buffer[] = [];
  if (ctx.maxSessionKeys > 0)
    socket.on('session', (session: Buffer) => {
      if (secured) keepSession(ctx, session);
      else early.push(session);
    });
  raw.once('connect', () => {
    tcpUp = true;
  });
  socket.once('secureConnect', () => {
    const failure = checkPeer(socket, ctx.peer, false);
    if (failure) {
      countFailure(stats, failure);
      socket.destroy();
      return;
    }
    secured = true;
    for (const session of early) keepSession(ctx, session);
    countHandshake(stats, {
      reused: socket.isSessionReused(),
      version: socket.getProtocol(),
      cipher: socket.getCipher()?.name,
      peerCert: true,
      curve: (socket.getEphemeralKeyInfo() as { name?: string } | null)?.name,
    });
    onReady?.();
  });
  socket.once('error', () => {
    if (tcpUp && !secured) stats.connection_error.inc();
  });
  return socket;
}
