import type { ServerState } from '../../events/index.js';
import type { HostState, State } from '../../reducers/state.js';
import { healthFlags } from '../clusters/select.js';
import { addressOf, sortedListeners } from '../listeners/render.js';
import { reportedState } from '../server-info/render.js';

/** What the top of the admin home page says about the server, read from one snapshot. */
export interface HomeSummary {
  /** As `/ready` reports it (a LIVE server failing its health checks reads DRAINING). */
  state: ServerState;
  version: string;
  uptimeMs: number;
  epoch: number;
  /** The previous epoch while it still drains or has just exited; absent in epoch 0. */
  parent: { epoch: number; step: string; connections: number } | null;
  listeners: Array<{ name: string; address: string; state: string }>;
  drain: { graceful: boolean; inboundOnly: boolean } | null;
  clusters: number;
  hosts: number;
  healthyHosts: number;
  /** The sequence number of the snapshot: the timeline link starts there. */
  seq: number;
}

/** A host that takes traffic: no failed verdict and not waiting for its first check. */
function isHealthy(host: HostState): boolean {
  return healthFlags(host).every((f) => !f.startsWith('/failed_') && f !== '/pending_active_hc');
}

export function homeSummary(state: State, now: number): HomeSummary {
  const clusters = Object.values(state.clusters);
  const hosts = clusters.flatMap((c) => c.hosts);
  const hr = state.server.hotRestart;
  return {
    state: reportedState(state),
    version: state.server.version,
    uptimeMs: Math.max(0, now - state.server.startedAt),
    epoch: hr?.epoch ?? 0,
    parent: hr ? hr.parent : null,
    listeners: sortedListeners(state).map((l) => ({ name: l.name, address: addressOf(l), state: l.state })),
    drain: state.drain.active
      ? { graceful: state.drain.graceful, inboundOnly: state.drain.inboundOnly }
      : null,
    clusters: clusters.length,
    hosts: hosts.length,
    healthyHosts: hosts.filter(isHealthy).length,
    seq: state.seq,
  };
}
