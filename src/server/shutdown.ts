/**
 * Graceful stop on SIGTERM and SIGINT: stop accepting at once, let the requests in flight
 * finish, then run the shutdown steps and exit 0. The drain is the `/drain_listeners` one
 * (every thread, workers included, follows it from the snapshot): HTTP/1 responses carry
 * `Connection: close` and idle connections close, HTTP/2 sessions get GOAWAY, TCP sessions
 * close over the drain time by `--drain-strategy`. The wait ends when no downstream
 * connection is left or after `--drain-time-s`, whichever comes first; what is still open
 * then is closed. A second signal stops at once.
 */
import { drainEnded, drainStarted, serverStateChanged, shutdownRequested } from '../../events/index.js';
import type { ServerContext } from '../context-core.js';
import { collectWorkerStats } from '../dataplane/index.js';

/** How often the drain looks at the connection count. */
const POLL_MS = 100;
/** A worker that does not report its connections within this is left out of one look. */
const WORKER_ANSWER_MS = 1000;

/** Downstream connections open in this process and in every worker. */
export async function openConnections(ctx: ServerContext): Promise<number> {
  const { stats } = await collectWorkerStats(ctx, WORKER_ANSWER_MS);
  return stats.gauges.get('server.total_connections')?.value ?? 0;
}

/**
 * Drains every listener and resolves once no downstream connection is open or the drain
 * time is over; then the caller runs the shutdown steps. Events say why, so the event log
 * and `/ready` (503 DRAINING) show the stop.
 */
export async function drainForShutdown(ctx: ServerContext, reason: string): Promise<void> {
  const drainTimeMs = ctx.options.drainTimeS * 1000;
  const deadline = performance.now() + drainTimeMs;
  ctx.store.dispatch(shutdownRequested({ reason }), 'server');
  ctx.store.dispatch(serverStateChanged({ state: 'DRAINING' }), 'server');
  ctx.store.dispatch(
    drainStarted({ inboundOnly: false, graceful: false, strategy: ctx.options.drainStrategy, drainTimeMs }),
    'server',
  );
  let left = await openConnections(ctx);
  while (performance.now() < deadline && left > 0) {
    await new Promise((resolve) =>
      setTimeout(resolve, Math.min(POLL_MS, Math.max(0, deadline - performance.now()))),
    );
    left = await openConnections(ctx);
  }
  // The start is logged from its event (src/edges/lifecycle-log.ts); the end has no listener side.
  ctx.log.get('main').info({ reason, connectionsLeft: left }, 'drain ended');
  ctx.store.dispatch(drainEnded({ connectionsLeft: left }), 'server');
}

/**
 * SIGTERM and SIGINT drain, then exit 0; the same signal again (or the other) exits at once.
 * Before LIVE there is nothing to drain, so they stop at once: hooked as soon as the context
 * exists, so a stop during a long start-up (an xDS server that never answers, with no
 * `initial_fetch_timeout`) still runs the shutdown steps and writes the event log out, where
 * the signal's default action killed the process (143). SIGHUP is eaten with a warning, as
 * the reference does: Node's default for it ends the process on the spot.
 */
export function stopOnSignals(ctx: ServerContext): void {
  const log = ctx.log.get('main');
  let draining = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (draining) {
      log.warn({ signal }, 'second signal while draining: closing what is left now');
      void ctx.shutdown(0);
      return;
    }
    draining = true;
    if (ctx.store.state.server.state !== 'LIVE') {
      log.warn({ signal, state: ctx.store.state.server.state }, 'signal before LIVE: stopping now');
      ctx.store.dispatch(shutdownRequested({ reason: signal }), 'server');
      ctx.store.dispatch(serverStateChanged({ state: 'DRAINING' }), 'server');
      void ctx.shutdown(0);
      return;
    }
    log.info({ signal, drainTimeS: ctx.options.drainTimeS }, 'draining before exit');
    void drainForShutdown(ctx, signal).then(
      () => ctx.shutdown(0),
      (err) => {
        log.error({ err }, 'drain failed; stopping now');
        return ctx.shutdown(0);
      },
    );
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, onSignal);
  process.on('SIGHUP', () =>
    log.warn(
      'caught and eating SIGHUP: hot restart is `proxy restarter` or --restart-epoch (docs/hot-restart.md)',
    ),
  );
}
