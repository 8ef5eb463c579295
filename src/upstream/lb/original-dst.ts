import { destinationState, parseDestination } from '../../../reducers/hosts.js';
import { newUpstreamHost } from '../host.js';
import type { LbContext, LoadBalancer, UpstreamHost } from '../types.js';
import type { BalancerInput } from './input.js';

/** The headers naming a request's destination for `use_http_header`, in both spellings. */
export const ORIGINAL_DST_HEADERS = ['x-proxy-original-dst-host', 'x-envoy-original-dst-host'] as const;

/** A destination host of an ORIGINAL_DST cluster and whether a request used it since the last sweep. */
interface Destination {
  host: UpstreamHost;
  used: boolean;
}

/**
 * ORIGINAL_DST_LB (and CLUSTER_PROVIDED on an ORIGINAL_DST cluster): the host is the
 * request's own destination (`LbContext.originalDst`), created the first time it is named
 * and kept in the cluster's memory across rebuilds; `sweep` drops the ones no request used
 * since the previous sweep, as the reference's `cleanup_interval` timer does.
 */
export class OriginalDstBalancer implements LoadBalancer {
  private readonly destinations: Map<string, Destination>;

  constructor(input: BalancerInput) {
    const memory = input.memory;
    memory.destinations ??= new Map();
    this.destinations = memory.destinations;
  }

  choose(context: LbContext): UpstreamHost | null {
    const wanted = context.originalDst;
    if (!wanted) return null;
    const known = this.destinations.get(wanted);
    if (known) {
      known.used = true;
      return known.host;
    }
    const parsed = parseDestination(wanted);
    if (!parsed) return null;
    const host = newUpstreamHost(destinationState(parsed));
    this.destinations.set(wanted, { host, used: true });
    return host;
  }

  /** Removes and returns the hosts unused since the previous sweep (all with `all`); marks the rest unused. */
  sweep(all = false): UpstreamHost[] {
    const gone: UpstreamHost[] = [];
    for (const [key, d] of this.destinations) {
      if (d.used && !all) d.used = false;
      else {
        this.destinations.delete(key);
        gone.push(d.host);
      }
    }
    return gone;
  }

  /** The destinations in use, for `/clusters`-style views and tests. */
  hosts(): UpstreamHost[] {
    return Array.from(this.destinations.values(), (d) => d.host);
  }
}
