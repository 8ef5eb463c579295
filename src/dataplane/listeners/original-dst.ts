import type * as net from 'node:net';
import { hostKey } from '../../../reducers/settings/endpoints.js';
import { type SocketHelper, socketHelper } from './native.js';

/**
 * On a connection whose local address is the restored original destination (the reference's
 * `localAddressRestored()`): that `ip:port`. A property rather than a WeakSet entry, as an
 * HTTP/2 session's socket is a proxy that forwards reads to the connection.
 */
const RESTORED = Symbol('restored original destination');

type Restorable = net.Socket & { [RESTORED]?: string };

/**
 * Gives `socket` the local address `ip:port` from now on: chain matching, `%DOWNSTREAM_LOCAL_ADDRESS%`
 * and ORIGINAL_DST clusters all read it through `localAddress` and `localPort`.
 */
export function restoreAs(socket: net.Socket, ip: string, port: number): void {
  Object.defineProperty(socket, 'localAddress', { value: ip });
  Object.defineProperty(socket, 'localPort', { value: port });
  Object.defineProperty(socket, RESTORED, { value: hostKey(ip, port) });
}

/**
 * The `original_dst` listener filter: reads where the client dialled (SO_ORIGINAL_DST, set by
 * an iptables REDIRECT or DNAT rule) and restores it as the connection's local address. Returns
 * it, or null where the kernel knows none (no NAT rule applied; the address stays as accepted).
 */
export function restoreOriginalDst(socket: net.Socket): { ip: string; port: number } | null {
  const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
  if (fd === undefined || fd < 0) return null;
  // The listener's compile step refused the filter where the helper does not load.
  let dst: { address: string; port: number } | null;
  try {
    dst = (socketHelper() as SocketHelper).originalDst(fd);
  } catch {
    // The peer reset it before we read it: it is about to close; nothing to restore.
    return null;
  }
  if (!dst) return null;
  restoreAs(socket, dst.address, dst.port);
  return { ip: dst.address, port: dst.port };
}

export function isRestored(socket: net.Socket): boolean {
  return restoredDestination(socket) !== null;
}

/** The restored original destination `ip:port` of a connection (an ORIGINAL_DST cluster's host), or null. */
export function restoredDestination(socket: net.Socket | undefined): string | null {
  return (socket as Restorable | undefined)?.[RESTORED] ?? null;
}
