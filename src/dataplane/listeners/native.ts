import * as net from 'node:net';
import { loadAddon } from '../../native.js';

/** The native socket helper (`native/sockopt.c`, built by `npm ci`): what node:net cannot do. */
export interface SocketHelper {
  /** Where a NAT rule's client dialled before it was sent here; null where no rule did. */
  originalDst(fd: number): { address: string; port: number } | null;
  /** A bound TCP socket's fd, with IP_TRANSPARENT, IP_FREEBIND or SO_REUSEPORT set before bind(). */
  bindSocket(host: string, port: number, transparent: boolean, freebind: boolean, reusePort: boolean): number;
}

let loaded: SocketHelper | string | undefined;

/**
 * The helper, loaded on first use (a proxy whose listeners need none of it never loads it), or
 * why it cannot be had: the sentence a refusal quotes.
 */
export function socketHelper(): SocketHelper | string {
  loaded ??= loadAddon<SocketHelper>('sockopt');
  return loaded;
}

/**
 * A listening handle for `net.Server.listen(handle)` on a socket the helper bound. As a handle
 * (not `{ fd }`), node:net listens on it in this process even in a cluster worker, which
 * would otherwise ask the primary to bind an fd number that means nothing there.
 */
export function boundHandle(fd: number): object {
  return (new net.Socket({ fd, readable: false, writable: false }) as unknown as { _handle: object })._handle;
}
