import type { UpstreamHost } from '../types.js';
import { EdfBalancer } from './edf-balancer.js';

/**
 * LEAST_REQUEST: equal weights sample `choice_count` random hosts and keep the one with the
 * fewest active requests (the first sample wins ties); unequal weights follow the EDF
 * schedule with weight / (active requests + 1), evaluated whenever a host is (re)added.
 */
export class LeastRequestBalancer extends EdfBalancer {
  protected weightOf(host: UpstreamHost): number {
    return host.state.weight / (host.stats.rq_active + 1);
  }

  protected unweightedPick(hosts: UpstreamHost[]): UpstreamHost {
    const random = this.input.random;
    const choices = Math.max(1, this.input.settings.leastRequestChoiceCount);
    let candidate = hosts[random() % hosts.length]!;
    for (let i = 1; i < choices; i++) {
      const sampled = hosts[random() % hosts.length]!;
      if (sampled.stats.rq_active < candidate.stats.rq_active) candidate = sampled;
    }
    return candidate;
  }
}
