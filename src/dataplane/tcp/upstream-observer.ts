import type * as net from 'node:net';

/**
 * What a network filter before the TCP proxy sees of the upstream's bytes (postgres_proxy reads
 * the server's replies): the proxy hands each chunk it relays to the downstream socket's
 * observer, if a filter set one. The downstream's own bytes a filter reads from its socket.
 */
const OBSERVER = Symbol('tcp proxy upstream observer');

type Observed = net.Socket & { [OBSERVER]?: (chunk: Buffer) => void };

export function setUpstreamObserver(socket: net.Socket, observe: (chunk: Buffer) => void): void {
  Object.defineProperty(socket, OBSERVER, { value: observe, configurable: true });
}

/** The observer a filter set on this downstream connection, or undefined. */
export function upstreamObserver(socket: net.Socket): ((chunk: Buffer) => void) | undefined {
  return (socket as Observed)[OBSERVER];
}
