import type { LbContext, UpstreamHost } from '../types.js';
import { EdfBalancer } from './edf-balancer.js';

/** RANDOM: a uniformly random host of the chosen source; weights are not considered. */
export class RandomBalancer extends EdfBalancer {
  protected weightOf(host: UpstreamHost): number {
    return host.state.weight;
  }

  protected override usesSchedule(): boolean {
    return false;
  }

  protected unweightedPick(hosts: UpstreamHost[]): UpstreamHost {
    return hosts[this.input.random() % hosts.length]!;
  }

  override choose(_context: LbContext): UpstreamHost | null {
    const source = this.hostSource();
    if (source < 0) return null;
    const hosts = this.sourceHosts(source);
    return hosts.length === 0 ? null : this.unweightedPick(hosts);
  }
}
