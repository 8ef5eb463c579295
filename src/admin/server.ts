import type { AddressInfo } from 'node:net';
import express from 'express';
import type { ServerContext } from '../server/context.js';
import { handlers } from './handlers/index.js';

/** Starts the admin listener where the bootstrap says; resolves to the bound `ip:port`. */
export async function startAdmin(ctx: ServerContext): Promise<string> {
  const app = express();
  for (const h of handlers) {
    app.all(h.path, async (req, res) => {
      const url = new URL(req.originalUrl, 'http://admin');
      const out = await h.handle(
        { method: req.method, path: h.path, query: url.searchParams, body: '', state: ctx.store.state },
        ctx,
      );
      res.status(out.status).type(out.contentType).send(out.body);
    });
  }
  const admin = (ctx.store.state.bootstrap?.config.admin ?? {}) as {
    address?: { socket_address?: { address?: string; port_value?: number } };
  };
  const host = admin.address?.socket_address?.address ?? '127.0.0.1';
  const port = admin.address?.socket_address?.port_value ?? 0;
  const server = app.listen(port, host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  ctx.onShutdown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const bound = server.address() as AddressInfo;
  return `${bound.address}:${bound.port}`;
}
