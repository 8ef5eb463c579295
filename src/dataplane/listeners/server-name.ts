import type * as net from 'node:net';

/**
 * The SNI a connection's ClientHello asked for (the reference's `requestedServerName()`), kept
 * on the socket by the listener that peeked it, for a chain that does not terminate TLS. A
 * property rather than a WeakSet entry, as original-dst.ts keeps the restored address.
 */
const SERVER_NAME = Symbol('requested server name');

type Named = net.Socket & { [SERVER_NAME]?: string; servername?: unknown };

/** Records the server name the listener read from the connection's ClientHello. */
export function recordServerName(socket: net.Socket, name: string): void {
  Object.defineProperty(socket, SERVER_NAME, { value: name });
}

/**
 * The server name a connection asked for: a TLS socket's own (the chain terminated TLS), else
 * the one its peeked ClientHello carried; '' for none (plain text, or no SNI).
 */
export function requestedServerName(socket: net.Socket): string {
  const named = socket as Named;
  if (typeof named.servername === 'string') return named.servername;
  return named[SERVER_NAME] ?? '';
}
