import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { bootstrapLoaded, type JsonObject } from '../../events/index.js';
import { statsHandlers } from '../../src/admin/handlers/stats.js';
import type { Options } from '../../src/cli/options.js';
import { Store } from '../../src/control/store.js';
import type { ServerContext } from '../../src/server/context.js';
import { startStats } from '../../src/stats/start.js';
import { StatsStore } from '../../src/stats/store.js';

/** A context with a real store and stats store, a bootstrap folded in, and no process exit. */
export function statsContext(bootstrap: JsonObject = {}, options: Partial<Options> = {}): ServerContext {
  const steps: Array<() => Promise<void> | void> = [];
  const silent = { error() {}, warn() {}, info() {}, debug() {} };
  const ctx = {
    options: { statsTags: [], concurrency: 1, restartEpoch: 0, ...options } as unknown as Options,
    store: new Store(),
    stats: new StatsStore(),
    log: { get: () => silent } as unknown as ServerContext['log'],
    onShutdown: (step: () => Promise<void> | void) => steps.push(step),
    async shutdown() {
      for (const step of steps.reverse()) await step();
    },
  } as ServerContext;
  ctx.store.dispatch(bootstrapLoaded({ bootstrap, options: {}, version: 'test', sources: [] }), 'test');
  return ctx;
}

/**
 * Serves the stats handlers on 127.0.0.1:0 over real HTTP, independent of the admin
 * adapter; counts requests per path so tests can see a page's polling stop.
 */
export async function startStatsAdmin(
  bootstrap: JsonObject = {},
  options: Partial<Options> = {},
): Promise<{ ctx: ServerContext; base: string; hits: Map<string, number>; close(): Promise<void> }> {
  const ctx = statsContext(bootstrap, options);
  startStats(ctx);
  const hits = new Map<string, number>();
  const app = express();
  for (const h of statsHandlers) {
    app.all(h.path, async (req, res) => {
      hits.set(h.path, (hits.get(h.path) ?? 0) + 1);
      const query = new URL(req.originalUrl, 'http://admin').searchParams;
      const areq = { method: req.method, path: h.path, query, body: '', state: ctx.store.state };
      if (h.mutates && req.method !== 'POST') {
        res.status(400).type('text/plain').send('Method GET not allowed, POST required.');
        return;
      }
      if (h.stream) {
        h.stream(areq, res, ctx);
        return;
      }
      const out = await h.handle(areq, ctx);
      res.status(out.status).type(out.contentType).send(out.body);
    });
  }
  const server: Server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    ctx,
    base: `http://127.0.0.1:${port}`,
    hits,
    async close() {
      await ctx.shutdown(0);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
