import type { Subscription } from 'rxjs';
import type { ServerContext } from '../context-core.js';

/**
 * Lifecycle at info, logged once by the primary from the events every thread folds (`serve`
 * logs the start itself): the configuration loaded (now), then each listener bound or failed, server state
 * changes (LIVE, DRAINING), listener drains and stops, and the shutdown request. Workers log
 * none of these, so `--concurrency N` does not repeat them N times.
 */
export function logLifecycle(ctx: ServerContext): Subscription {
  const log = ctx.log.get('main');
  const { options } = ctx;
  const state = ctx.store.state;
  log.info(
    {
      config: options.configPath || '--config-yaml',
      concurrency: options.concurrency,
      listeners: Object.keys(state.listeners).length,
      clusters: Object.keys(state.clusters).length,
    },
    'configuration loaded',
  );
  const subscription = ctx.store.ingested$.subscribe(({ event }) => {
    switch (event.type) {
      case 'listener/bound':
        log.info({ listener: event.name, address: `${event.address}:${event.port}` }, 'listener bound');
        return;
      case 'listener/bind-failed':
        log.error({ listener: event.name, error: event.error }, 'listener failed to bind');
        return;
      case 'server/state-changed':
        log.info({ state: event.state }, `server ${event.state}`);
        return;
      case 'listener/drain-started':
        log.info(
          { graceful: event.graceful, inboundOnly: event.inboundOnly, strategy: event.strategy },
          'draining listeners',
        );
        return;
      case 'listener/stopped':
        log.info({ listeners: event.names }, 'listeners stopped');
        return;
      case 'server/shutdown-requested':
        log.info({ reason: event.reason }, 'shutdown requested');
        return;
    }
  });
  ctx.onShutdown(() => {
    subscription.unsubscribe();
    log.info({ pid: process.pid }, 'proxy shut down');
  });
  return subscription;
}
