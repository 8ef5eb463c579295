import * as net from 'node:net';
import * as tls from 'node:tls';
import { pipeSocketPath } from '../../reducers/settings/endpoints.js';
import type { UpstreamTls } from '../config/tls-context.js';
import type { Scope } from '../stats/store.js';
import { checkPeer } from './peer-check.js';
import { countFailure, countHandshake, sslStats } from './stats.js';

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
  /** `ip` is a unix socket's path (an endpoint's `pipe`). */
  pipe?: boolean;
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
  const opts: net.TcpSocketConnectOpts | net.IpcSocketConnectOpts = target.pipe
    ? { path: pipeSocketPath(target.ip) }
    : { host: target.ip, port: target.port };
  if (target.localAddress && 'host' in opts) {
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
