/** The stats admin endpoints over a real socket, on a context with a real store and stats store. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { bootstrapLoaded, type JsonObject } from '../../events/index.js';
import { statsHandlers } from '../../src/admin/handlers/stats.js';
import type { Options } from '../../src/options.js';
import { DEFAULT_OPTIONS } from '../../src/cli/parse.js';
import { createContext, type ServerContext } from '../../src/context.js';
import { createLoggers } from '../../src/logging/loggers.js';
import { bodyText } from '../../views/result.js';

/** A context with a real store and stats store, a bootstrap folded in, and no process exit. */
export function statsContext(bootstrap: JsonObject = {}, options: Partial<Options> = {}): ServerContext {
  const ctx = createContext({
    options: { ...DEFAULT_OPTIONS, statsTags: [], concurrency: 1, restartEpoch: 0, ...options },
    log: createLoggers('fatal'),
    history: false,
    exit: () => {},
  });
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
  ctx.statsRuntime.start();
  const hits = new Map<string, number>();
  const app = express();
  for (const h of statsHandlers) {
    app.all(h.path, async (req, res) => {
      hits.set(h.path, (hits.get(h.path) ?? 0) + 1);
      const query = new URL(req.originalUrl, 'http://admin').searchParams;
      const areq = {
        method: req.method,
        path: h.path,
        query,
        body: '',
        state: ctx.store.state,
        table: statsHandlers,
      };
      if (h.mutates && req.method !== 'POST') {
        res.status(400).type('text/plain').send('Method GET not allowed, POST required.');
        return;
      }
      if (h.stream) {
        h.stream(areq, res, ctx);
        return;
      }
      const out = await h.handle(areq, ctx);
      res.status(out.status).type(out.contentType).send(bodyText(out.body));
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
