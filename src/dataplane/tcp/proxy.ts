import type * as net from 'node:net';
import type { Observable, Subscription } from 'rxjs';
import type { State } from '../../../reducers/index.js';
import { clusterSettings } from '../../../reducers/settings/cluster.js';
import { startAccessLogs } from '../access-log/config.js';
import type { HttpConnectionManagerDeps } from '../http/types.js';
import type { NetworkFilterHandler } from '../network-filter.js';
import type { TcpProxySettings } from './config.js';
import { type TcpProxyShared, TcpSession } from './session.js';
import { tcpProxyStats } from './stats.js';

/**
 * The `tcp_proxy` network filter: each accepted connection is relayed to a host the
 * cluster's balancer picks. `deps` are the ones the HTTP connection manager gets.
 */
export function createTcpProxy(
  settings: TcpProxySettings,
  deps: HttpConnectionManagerDeps,
): NetworkFilterHandler {
  const { ctx, clusters } = deps;
  const shared: TcpProxyShared = {
    settings,
    stats: tcpProxyStats(ctx.stats.scope(`tcp.${settings.statPrefix}`)),
    clusters,
    sessions: new Set(),
    accessLog: startAccessLogs(settings.accessLogs, ctx),
  };
  let drainDeadline: { strategy: 'gradual' | 'immediate'; at: number } | null = null;
  const timers = new Set<NodeJS.Timeout>();
  const closeLater = (session: TcpSession) => {
    if (!drainDeadline) return;
    const left = Math.max(0, drainDeadline.at - performance.now());
    // Gradual: each connection closes at a uniformly random point of what is left of the
    // drain time, so the share asked to go rises linearly to 100% at the deadline.
    const delay = drainDeadline.strategy === 'gradual' ? Math.random() * left : left;
    const timer = setTimeout(() => {
      timers.delete(timer);
      session.close();
    }, delay);
    timer.unref();
    timers.add(timer);
  };
  const health = watchHostHealth(ctx.store.state$, shared);
  return {
    handle(socket: net.Socket) {
      const session = new TcpSession(shared, socket);
      session.start();
      closeLater(session);
    },
    drain(strategy, drainTimeMs) {
      drainDeadline = { strategy, at: performance.now() + drainTimeMs };
      for (const session of shared.sessions) closeLater(session);
    },
    async close() {
      health.unsubscribe();
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      const closed = [...shared.sessions].map(
        (s) => new Promise<void>((resolve) => s.downstream.once('close', () => resolve())),
      );
      for (const session of shared.sessions) session.destroy();
      await Promise.all(closed);
      shared.accessLog?.release();
    },
  };
}

/**
 * `close_connections_on_host_health_failure`: when a snapshot marks a host as failing an
 * active health check or outlier detection, connections this filter holds to it are dropped.
 */
function watchHostHealth(states: Observable<State>, shared: TcpProxyShared): Subscription {
  let previous: State['clusters'] | null = null;
  return states.subscribe((state) => {
    if (state.clusters === previous) return;
    previous = state.clusters;
    for (const session of shared.sessions) {
      if (!session.hostAddress) continue;
      const entry = state.clusters[session.clusterName];
      if (!entry || !clusterSettings(entry.config).closeConnectionsOnHostHealthFailure) continue;
      const host = entry.hosts.find((h) => h.address === session.hostAddress);
      if (host && (host.failedActiveHc || host.failedOutlierCheck)) session.destroy();
    }
  });
}
