import { writeFileSync } from 'node:fs';
import { bootstrapLoaded, serverStateChanged } from '../../events/index.js';
import { startAdmin } from '../admin/server.js';
import { loadBootstrap } from '../bootstrap/load.js';
import type { Options } from '../cli/options.js';
import { commandLineOptionsJson } from '../cli/server-info-options.js';
import { createContext, type ServerContext } from '../context.js';
import { startDataPlane } from '../dataplane/index.js';
import { VERSION } from '../version.js';
import { startEdges } from './edges.js';
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
  // The history and the event log record from here: the bootstrap is their first event.
  const ctx = createContext({ options, bootstrap: loaded.bootstrap });
  ctx.store.dispatch(
    bootstrapLoaded({
      bootstrap: loaded.bootstrap,
      options: commandLineOptionsJson(options),
      version: VERSION,
      sources: loaded.sources,
    }),
    'bootstrap',
  );
  const edges = await startEdges(ctx);
  const configLog = ctx.log.get('config');
  for (const warning of loaded.warnings) configLog.warn(warning);
  ctx.stats.counter('server.static_unknown_fields').add(loaded.unknownFields);
  const adminAddress = await startAdmin(ctx);
  if (options.adminAddressPath) writeFileSync(options.adminAddressPath, adminAddress);
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
  ctx.store.dispatch(serverStateChanged({ state: 'LIVE' }), 'server');
  stopOnSignals(ctx);
  return ctx;
}
