import type { LoadBalancer } from '../types.js';
import type { BalancerInput } from './input.js';
import { LeastRequestBalancer } from './least-request.js';
import { maglevTables } from './maglev.js';
import { OriginalDstBalancer } from './original-dst.js';
import { RandomBalancer } from './random.js';
import { ringTables } from './ring-hash.js';
import { RoundRobinBalancer } from './round-robin.js';
import { SubsetBalancer } from './subset.js';
import { ThreadAwareBalancer } from './thread-aware.js';

export type { BalancerInput, LbMemory } from './input.js';

/** A balancer that never finds a host: for policies not implemented and for clusters that failed to build. */
export const NO_HOST: LoadBalancer = { choose: () => null };

/**
 * The balancer for a cluster's `lb_policy`; with `lb_subset_config`, the subset balancer
 * over it. Throws (with the reason) when the config cannot be built, e.g. a ring whose
 * minimum exceeds its maximum.
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
    case 'ORIGINAL_DST_LB':
      return new OriginalDstBalancer(input);
    case 'CLUSTER_PROVIDED':
      // The one cluster type of this build that provides its own balancer.
      return input.settings.type === 'ORIGINAL_DST' ? new OriginalDstBalancer(input) : NO_HOST;
    default:
      return NO_HOST;
  }
}
