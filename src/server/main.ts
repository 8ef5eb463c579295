import { writeFileSync } from 'node:fs';
import { bootstrapLoaded, serverStateChanged } from '../../events/index.js';
import { startAdmin } from '../admin/server.js';
import { loadBootstrap } from '../bootstrap/load.js';
import { startDataPlane } from '../dataplane/index.js';
import type { Options } from '../cli/options.js';
import { commandLineOptionsJson } from '../cli/server-info-options.js';
import { startEventLog } from '../control/event-log.js';
import { Store } from '../control/store.js';
import { createLoggers } from '../logging/loggers.js';
import { bindLoggingToStore } from '../logging/store-binding.js';
import { startStats } from '../stats/start.js';
import { StatsStore } from '../stats/store.js';
import { VERSION } from '../version.js';
import { discoveryInitialized, startXds } from '../xds/client.js';
import type { ServerContext } from './context.js';
import { stopOnSignals } from './shutdown.js';

/**
 * Serves: loads the bootstrap, folds it into the store, starts every edge, goes LIVE.
 * Resolves to the context so tests and the CLI can drive shutdown.
 */
export async function serve(options: Options): Promise<ServerContext> {
  const loaded = loadBootstrap(options);
  if (!loaded.ok) {
    for (const error of loaded.errors) process.stderr.write(`${error}\n`);
    process.exit(1);
  }
  const steps: Array<() => Promise<void> | void> = [];
  let stopping: Promise<void> | null = null;
  const ctx: ServerContext = {
    options,
    store: new Store(),
    stats: new StatsStore(),
    log: createLoggers(options),
    onShutdown: (step) => steps.push(step),
    shutdown(code) {
      stopping ??= (async () => {
        for (const step of steps.reverse()) {
          try {
            await step();
          } catch (err) {
            ctx.log.get('main').error({ err }, 'shutdown step failed');
          }
        }
        process.exit(code);
      })();
      return stopping;
    },
  };
  startEventLog(ctx, loaded.bootstrap);
  ctx.store.dispatch(
    bootstrapLoaded({
      bootstrap: loaded.bootstrap,
      options: commandLineOptionsJson(options),
      version: VERSION,
      sources: loaded.sources,
    }),
    'bootstrap',
  );
  const logLevels = bindLoggingToStore(ctx.log, ctx.store);
  ctx.onShutdown(() => {
    logLevels.unsubscribe();
    ctx.log.close();
  });
  startStats(ctx);
  const configLog = ctx.log.get('config');
  for (const warning of loaded.warnings) configLog.warn(warning);
  ctx.stats.counter('server.static_unknown_fields').add(loaded.unknownFields);
  const adminAddress = await startAdmin(ctx);
  if (options.adminAddressPath) writeFileSync(options.adminAddressPath, adminAddress);
  // INITIALIZING (set by bootstrap-loaded) lasts until the listeners are bound.
  // xDS subscriptions (CDS, EDS, LDS, RDS): cluster, endpoint, listener and route events.
  startXds(ctx);
  await startDataPlane(ctx);
  // Like the reference, a static listener that cannot bind fails start-up: never LIVE with
  // a configured listener unbound.
  const unbound = Object.values(ctx.store.state.listeners).filter((l) => l.state === 'failed');
  if (unbound.length > 0) {
    for (const l of unbound) process.stderr.write(`error: ${l.error}\n`);
    ctx.log.get('main').error({ listeners: unbound.map((l) => l.name) }, 'start-up failed: listeners unbound');
    await ctx.shutdown(1);
  }
  // LIVE once every initial discovery fetch is done or timed out (initial_fetch_timeout).
  await discoveryInitialized(ctx);
  ctx.store.dispatch(serverStateChanged({ state: 'LIVE' }), 'server');
  stopOnSignals(ctx);
  return ctx;
}
