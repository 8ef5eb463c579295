import { bootstrapLoaded, hotRestarted, hotRestartParent, serverStateChanged } from '../../events/index.js';
import { startAdmin } from '../admin/server.js';
import { withApplicationLogFormat } from '../bootstrap/application-log.js';
import { loadBootstrap } from '../bootstrap/load.js';
import { hotRestartVersion } from '../cli/hot-restart-version.js';
import { writeOutputFile } from '../cli/output-file.js';
import { commandLineOptionsJson } from '../cli/server-info-options.js';
import { createContext, type ServerContext } from '../context.js';
import { startDataPlane } from '../dataplane/index.js';
import { ListenSockets } from '../dataplane/listeners/sockets.js';
import { startEdges } from '../edges/start.js';
import { surviveBrokenPipes } from '../logging/broken-pipes.js';
import { collectStartUp, collectWhenIdle, lendHeapToStartUp, settleServingHeap } from '../memory.js';
import type { Options } from '../options.js';
import { VERSION } from '../version.js';
import { ParentLink } from './hot-restart/child.js';
import { startHotRestartParent } from './hot-restart/parent.js';
import { stopOnSignals } from './shutdown.js';

/** With `--restart-epoch` above 0 (and hot restart on), the link to the running epoch. */
async function connectToParent(options: Options): Promise<ParentLink | null> {
  if (options.restartEpoch === 0 || options.disableHotRestart) return null;
  try {
    return await ParentLink.connect(options, hotRestartVersion(options));
  } catch (err) {
    process.stderr.write(`error: ${(err as Error).message}\n`);
    process.exit(1);
  }
}

/**
 * This epoch is LIVE on the parent's sockets: the parent drains and exits; each step it
 * reports is an event, its open connections the `server.parent_connections` gauge.
 */
function followParent(ctx: ServerContext, parent: ParentLink): void {
  const gauge = ctx.stats.gauge('server.parent_connections');
  const log = ctx.log.get('main');
  parent.onConnections = (connections) => gauge.set(connections);
  parent.drain((step, connections) => {
    gauge.set(connections);
    log.info({ epoch: parent.parentEpoch, step, connections }, `hot restart: parent epoch ${step}`);
    ctx.store.dispatch(hotRestartParent({ epoch: parent.parentEpoch, step, connections }), 'server');
  });
}

/**
 * Serves: loads the bootstrap, folds it into the store, starts every edge, goes LIVE.
 * Resolves to the context so tests and the CLI can drive shutdown.
 */
export async function serve(options: Options): Promise<ServerContext> {
  surviveBrokenPipes();
  lendHeapToStartUp();
  const loaded = loadBootstrap(options);
  if (!loaded.ok) {
    for (const error of loaded.errors) process.stderr.write(`${error}\n`);
    process.exit(1);
  }
  // A hot-restart child first makes sure the running epoch lets it take over (else it exits
  // and the parent serves on), then takes the event log: from here on it writes it.
  const parent = await connectToParent(options);
  await parent?.releaseLog();
  // The history and the event log record from here: the bootstrap is their first event.
  // The bootstrap's application_log_config is the log format of every part of the process.
  const ctx = createContext({
    options: withApplicationLogFormat(options, loaded.bootstrap),
    bootstrap: loaded.bootstrap,
    sockets: new ListenSockets(parent),
  });
  const log = ctx.log.get('main');
  stopOnSignals(ctx);
  ctx.store.dispatch(
    bootstrapLoaded({
      bootstrap: loaded.bootstrap,
      options: commandLineOptionsJson(options),
      version: VERSION,
      sources: loaded.sources,
      apiVersion: loaded.apiVersion,
    }),
    'bootstrap',
  );
  log.info({ epoch: options.restartEpoch, version: VERSION }, 'starting');
  if (parent) {
    log.info({ epoch: options.restartEpoch, parentEpoch: parent.parentEpoch }, 'hot restart: taking over');
    ctx.store.dispatch(
      hotRestarted({
        epoch: options.restartEpoch,
        parentEpoch: parent.parentEpoch,
        firstStartedAt: parent.firstStartedAt,
      }),
      'server',
    );
  }
  const edges = await startEdges(ctx);
  const configLog = ctx.log.get('config');
  for (const warning of loaded.warnings) configLog.warn(warning);
  ctx.stats.counter('server.static_unknown_fields').add(loaded.unknownFields);
  const adminAddress = await startAdmin(ctx);
  if (options.adminAddressPath)
    writeOutputFile('--admin-address-path', options.adminAddressPath, adminAddress);
  // INITIALIZING (set by bootstrap-loaded) lasts until the listeners are bound.
  await startDataPlane(ctx, edges.health);
  // Like the reference, a static listener that cannot bind fails start-up: never LIVE with
  // a configured listener unbound.
  const unbound = Object.values(ctx.store.state.listeners).filter((l) => l.state === 'failed');
  if (unbound.length > 0) {
    for (const l of unbound) process.stderr.write(`error: ${l.error}\n`);
    ctx.log
      .get('main')
      .error({ listeners: unbound.map((l) => l.name) }, 'start-up failed: listeners unbound');
    await ctx.shutdown(1);
  }
  // LIVE once every initial discovery fetch is done or timed out (initial_fetch_timeout).
  await edges.xds.initialized;
  // Stopped while starting (a signal, /quitquitquit): the exit is under way, never LIVE.
  if (ctx.store.state.server.shutdownRequested) return ctx;
  ctx.store.dispatch(serverStateChanged({ state: 'LIVE' }), 'server');
  settleServingHeap();
  log.debug({ ms: collectStartUp() }, 'start-up garbage collected');
  ctx.onShutdown(collectWhenIdle((ms) => log.debug({ ms }, 'load ended: heap collected')));
  if (process.env.PROXY_RESTARTER_PID && process.connected) {
    // The restarter is gone (killed): nothing can restart or stop this epoch in order now.
    process.once('disconnect', () => {
      log.warn('the restarter is gone; draining and stopping');
      process.kill(process.pid, 'SIGTERM');
    });
  }
  if (parent) followParent(ctx, parent);
  if (!options.disableHotRestart && options.mode === 'serve') await startHotRestartParent(ctx);
  return ctx;
}
