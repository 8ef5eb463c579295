import type { HostState } from '../../reducers/state.js';
import { zeroHostCounters } from '../../views/clusters/figures.js';
import type { UpstreamHost } from './types.js';

/** A member as the data plane holds it: zero counters, no pool until first use. */
export function newUpstreamHost(state: HostState): UpstreamHost {
  return {
    address: state.address,
    ip: state.ip,
    port: state.port,
    state,
    stats: zeroHostCounters(),
    pool: null,
  };
}
