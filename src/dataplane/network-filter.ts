import type * as net from 'node:net';

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
