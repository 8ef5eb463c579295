/**
 * The hot-restart handover format: what a new epoch (the child) and the running one (the
 * parent) say over the parent's domain socket, one JSON object per line, and the IPC message
 * that carries a listening socket through `proxy restarter`. Any change here is a change of
 * the handover format: bump `HANDOVER_FORMAT_VERSION`, which leads `--hot-restart-version` and
 * `GET /hot_restart_version`, so that epochs of different formats refuse each other.
 */
import type { Socket } from 'node:net';

/** The handover format's version: the first part of the hot-restart version (`11.104`). */
export const HANDOVER_FORMAT_VERSION = 11;

export type ChildMessage =
  /** First line: who is asking; the parent refuses a different version, base ID or epoch. */
  | { type: 'hello'; version: string; baseId: number; epoch: number; ipc: boolean }
  /** Stop writing the event log: the child appends to it from now on. */
  | { type: 'release-log' }
  /** The listening socket bound at `address` (`ip:port`, `[ip]:port` for IPv6), if any. */
  | { type: 'socket'; id: number; address: string }
  /** The child is LIVE: drain and exit. */
  | { type: 'drain' };

export type ParentMessage =
  | { type: 'welcome'; epoch: number; firstStartedAt: number }
  | { type: 'refused'; error: string }
  | { type: 'log-released' }
  /** `sent`: the socket went out through the restarter's IPC channel, tagged with `id`. */
  | { type: 'socket'; id: number; address: string; sent: boolean }
  | { type: 'draining'; connections: number }
  | { type: 'connections'; connections: number }
  | { type: 'drained'; connections: number };

/** Parent -> restarter -> child over the IPC channels, with the listening socket's handle. */
export interface SocketHandover {
  proxyHotRestart: 'socket';
  /** The epoch it is for: the restarter forwards it to that child. */
  to: number;
  id: number;
  address: string;
}

export function isSocketHandover(msg: unknown): msg is SocketHandover {
  return typeof msg === 'object' && msg !== null && (msg as SocketHandover).proxyHotRestart === 'socket';
}

/** At most this many epochs run at once (the reference's limit), so domain socket IDs cycle. */
const MAX_CONCURRENT_EPOCHS = 3;

/**
 * The domain socket of an epoch in `role`: `--socket-path` with the reference's
 * `_{role}_{id}` suffix, the ID being `base_id * 10 + epoch % 3`; a leading `@` names the
 * abstract namespace. `name` is for messages, `address` for `listen`/`connect`.
 */
export function domainSocket(
  socketPath: string,
  role: 'parent',
  baseId: number,
  epoch: number,
): { name: string; address: string; abstract: boolean } {
  const name = `${socketPath}_${role}_${baseId * 10 + (epoch % MAX_CONCURRENT_EPOCHS)}`;
  const abstract = name.startsWith('@');
  return { name, address: abstract ? `\0${name.slice(1)}` : name, abstract };
}

/** `ip:port`, bracketed for IPv6 (the hosts' own key): how listening sockets are asked for. */
export { hostKey as socketKey } from '../reducers/settings/endpoints.js';

/**
 * The longest line either side reads: every message is under 1 KiB. A peer that sends more
 * without a newline is no epoch, and its bytes must not pile up.
 */
export const MAX_LINE_CHARS = 64 * 1024;

/**
 * Calls `onMessage` with each JSON line read from `socket`; a line that is not a JSON object
 * with a string `type`, or one longer than `MAX_LINE_CHARS`, closes it. The socket is open to
 * any local process that can reach its name (the abstract namespace has no file modes), so
 * its lines are untrusted input.
 */
export function readLines<T>(socket: Socket, onMessage: (msg: T) => void): void {
  let buffered = '';
  socket.setEncoding('utf8');
  const refuse = (why: string) =>
    socket.destroy(new Error(`hot restart: a line on the domain socket ${why}`));
  socket.on('data', (chunk: string) => {
    if (socket.destroyed) return;
    buffered += chunk;
    for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      let msg: unknown;
      try {
        msg = JSON.parse(line);
      } catch {
        refuse('is not JSON');
        return;
      }
      if (typeof msg !== 'object' || msg === null || typeof (msg as { type?: unknown }).type !== 'string') {
        refuse('is not a message (an object with a type)');
        return;
      }
      onMessage(msg as T);
      if (socket.destroyed) return;
    }
    if (buffered.length > MAX_LINE_CHARS) refuse(`is longer than ${MAX_LINE_CHARS} characters`);
  });
}

export function writeLine(socket: Socket, msg: ChildMessage | ParentMessage): void {
  if (!socket.destroyed) socket.write(`${JSON.stringify(msg)}\n`);
}
