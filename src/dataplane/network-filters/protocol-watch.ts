/**
 * A read filter that only watches a protocol go by (postgres_proxy, mysql_proxy): each
 * connection gets a decoder of its own, fed the client's bytes from its socket and the
 * server's as the chain's TCP proxy relays them, and counting into `<root>.<stat>` counters.
 */
import { setUpstreamObserver } from '../tcp/upstream-observer.js';
import type { ConnectionFilter, NetworkFilterDeps } from './api.js';

export interface ProtocolDecoder {
  client(chunk: Buffer): void;
  server(chunk: Buffer): void;
}

export function protocolWatch<S extends string>(
  { ctx }: NetworkFilterDeps,
  root: string,
  stats: readonly S[],
  decoder: (count: (stat: S) => void) => ProtocolDecoder,
): ConnectionFilter {
  const counters = new Map(stats.map((s) => [s, ctx.stats.counter(`${root}.${s}`)]));
  const count = (stat: S) => counters.get(stat)?.inc();
  return {
    onNewConnection(socket, proceed) {
      const d = decoder(count);
      socket.on('data', (chunk: Buffer) => d.client(chunk));
      setUpstreamObserver(socket, (chunk) => d.server(chunk));
      proceed();
    },
  };
}
