import type { Server } from 'node:net';

/** Where inherited sockets come from: the link to the parent epoch (`child.ts`). */
export interface SocketSource {
  /** The parent's listening socket bound at `address` as a handle for `listen`, or null. */
  socket(address: string): Promise<object | null>;
}

/**
 * Where a port-0 listener's port comes from when several threads bind it (`WorkerPool`): the
 * port another thread bound it at, or 0 for the thread that binds it first.
 */
export interface PortSource {
  port(listener: string): Promise<number>;
}

interface Offered {
  server: Server;
  /** Runs once the socket went to the next epoch (the admin stops accepting then). */
  onHandover: () => void;
}

/** What an offer that stops accepting on handover does if the next epoch fails after all. */
export interface Handover {
  /** Runs once the socket went to the next epoch. */
  stop(): void;
  /** Runs if that epoch went away before taking over: accept again (bind anew). */
  resume(): void;
}

/**
 * The listening sockets of this process by bound address (`socketKey`): what it adopts from
 * its parent epoch when it binds, and offers to its child epoch. Every listener that binds
 * asks here first, so a socket adopted is never bound twice.
 */
export class ListenSockets {
  private readonly offered = new Map<string, Offered>();
  /** Offers that stopped on handover, until the next epoch took over or failed. */
  private readonly stopped = new Set<Handover>();

  constructor(
    private readonly parent: SocketSource | null = null,
    private ports: PortSource | null = null,
  ) {}

  /**
   * From now on port-0 listeners take their port from `ports`: the main thread's, once its
   * workers start (its sockets are made before the pool, with the context).
   */
  sharePorts(ports: PortSource): void {
    this.ports = ports;
  }

  /** The port to bind `listener` at: `port` as configured, or for 0 the one its other threads share. */
  port(listener: string, port: number): Promise<number> {
    return port === 0 && this.ports ? this.ports.port(listener) : Promise.resolve(port);
  }

  /** The parent epoch's socket for `address` (`ip:port` as configured), or null: bind it. */
  adopt(address: string): Promise<object | null> {
    return this.parent ? this.parent.socket(address) : Promise.resolve(null);
  }

  /** Makes `server`, listening at `address`, available to the next epoch; returns the withdrawal. */
  offer(address: string, server: Server, handover: Handover | null = null): () => void {
    const entry = {
      server,
      onHandover: () => {
        if (!handover) return;
        handover.stop();
        this.stopped.add(handover);
      },
    };
    this.offered.set(address, entry);
    return () => {
      if (this.offered.get(address) === entry) this.offered.delete(address);
    };
  }

  /** The next epoch went away before taking over: what stopped on handover accepts again. */
  resumeStopped(): void {
    for (const handover of this.stopped) handover.resume();
    this.stopped.clear();
  }

  /** The server offered at `address`, if it still listens. */
  find(address: string): Offered | null {
    const entry = this.offered.get(address);
    return entry?.server.listening ? entry : null;
  }
}
