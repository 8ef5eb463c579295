import type { HostState } from '../../reducers/state.js';
import { zeroHostCounters } from '../../views/clusters/figures.js';
import type { HostHashes, HostStats, UpstreamHost } from './types.js';

/**
 * A member as the data plane holds it. Its address, ip and port are read from its newest
 * record (a member keeps its address for life) rather than held a second time, and its
 * counters are made on first use: most members of a 10k-host cluster see no request for a
 * long while, and their zero counters were the biggest object per host.
 */
class Member implements UpstreamHost {
  private counters: HostStats | null = null;
  pool: unknown = null;
  hashes: HostHashes | null = null;

  constructor(public state: HostState) {}

  get address(): string {
    return this.state.address;
  }

  get ip(): string {
    return this.state.ip;
  }

  get port(): number {
    return this.state.port;
  }

  get stats(): HostStats {
    this.counters ??= zeroHostCounters();
    return this.counters;
  }
}

/** A member as the data plane holds it: zero counters, no pool until first use. */
export function newUpstreamHost(state: HostState): UpstreamHost {
  return new Member(state);
}
