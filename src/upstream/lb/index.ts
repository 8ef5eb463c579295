import type { LoadBalancer } from '../types.js';
import type { BalancerInput } from './input.js';
import { LeastRequestBalancer } from './least-request.js';
import { maglevTables } from './maglev.js';
import { RandomBalancer } from './random.js';
import { ringTables } from './ring-hash.js';
import { RoundRobinBalancer } from './round-robin.js';
import { SubsetBalancer } from './subset.js';
import { ThreadAwareBalancer } from './thread-aware.js';

export type { BalancerInput, LbMemory } from './input.js';

/** A balancer that never finds a host: for policies not implemented and for clusters that failed to build. */
export const NO_HOST: LoadBalancer = { choose: () => null };

/**
 * The balancer for a cluster's `lb_policy`. ORIGINAL_DST_LB and CLUSTER_PROVIDED have no
 * balancer yet and choose nothing. Throws (with the reason) when the config cannot be
 * built, e.g. a ring whose minimum exceeds its maximum.
 */
export function buildLoadBalancer(input: BalancerInput): LoadBalancer {
  const subset = input.settings.subset;
  if (subset) return new SubsetBalancer(input, subset, buildLoadBalancer);
  switch (input.settings.lbPolicy.toUpperCase()) {
    case 'ROUND_ROBIN':
      return new RoundRobinBalancer(input);
    case 'LEAST_REQUEST':
      return new LeastRequestBalancer(input);
    case 'RANDOM':
      return new RandomBalancer(input);
    case 'RING_HASH':
      return new ThreadAwareBalancer(input, ringTables(input.settings, input.scope));
    case 'MAGLEV':
      return new ThreadAwareBalancer(input, maglevTables(input.scope));
    default:
      return NO_HOST;
  }
}
