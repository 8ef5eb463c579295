import type { UpstreamHost } from '../types.js';
import { EdfBalancer } from './edf-balancer.js';

/**
 * ROUND_ROBIN: equal weights rotate through the hosts from a random start (the cluster's
 * seed), unequal weights follow the EDF schedule by weight.
 */
export class RoundRobinBalancer extends EdfBalancer {
  protected weightOf(host: UpstreamHost): number {
    return host.state.weight;
  }

  protected unweightedPick(hosts: UpstreamHost[], source: number): UpstreamHost {
    const indexes = this.input.memory.rrIndexes;
    const i = indexes[source] ?? this.input.memory.seed;
    indexes[source] = i + 1;
    return hosts[i % hosts.length]!;
  }
}
