import type * as net from 'node:net';
import type { ServerContext } from '../../context.js';
import type { ClusterRuntime } from '../../upstream/types.js';
import type { ClusterTraffic } from '../pool/cluster-traffic.js';

/**
 * Finds the live runtime of a cluster by name, carrying its traffic record; provided by the
 * upstream cluster manager built with the `clusterTraffic` factory.
 */
export interface ClusterLookup {
  get(name: string): ClusterRuntime<ClusterTraffic> | undefined;
}

/** What the listener side hands to every HTTP connection manager it builds. */
export interface HttpConnectionManagerDeps {
  ctx: ServerContext;
  clusters: ClusterLookup;
  /** Name of the listener owning the filter chain, for logs and stats. */
  listenerName: string;
}

/**
 * A terminal network filter: the listener accepts a socket and gives it away with
 * `handle`; from then on the filter owns it (reads, writes, closes).
 */
export interface NetworkFilterHandler {
  /** Takes ownership of an accepted downstream connection. */
  handle(socket: net.Socket): void;
  /**
   * Starts draining: HTTP/1 responses carry `Connection: close`, HTTP/2 sessions get GOAWAY,
   * idle connections close. `gradual` spreads the closing over `drainTimeMs`.
   */
  drain(strategy: 'gradual' | 'immediate', drainTimeMs: number): void;
  /** Closes every connection this filter owns; resolves once they are gone. */
  close(): Promise<void>;
  /**
   * How long a connection may stay silent from its accept (the HCM's `idle_timeout`; 0: no
   * limit). A TLS chain holds its handshake to it too, as the reference's idle timer runs
   * through the handshake. Absent: the TLS server's own handshake timeout (120 s) alone.
   */
  readonly connectionIdleMs?: number;
}
