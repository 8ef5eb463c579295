import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { JsonObject } from '../../events/index.js';
import { hostKey } from '../../reducers/settings/endpoints.js';
import { type Chunks, text } from '../../views/result.js';
import type { ServerContext } from '../context-core.js';
import { socketKey } from '../hot-restart-protocol.js';
import { http } from '../node-http.js';
import { adminAccessLog } from './access-log.js';
import { readAdminBody } from './body.js';
import { routeAdmin } from './dispatch.js';
import { handlers } from './handlers/index.js';
import { adminPipeOf, listenOnPipe } from './pipe.js';
import type { AdminResponse, HandlerDescriptor } from './registry.js';

/** Headers every admin answer carries, streaming ones included. */
function commonHeaders(res: Response, contentType: string): void {
  res.setHeader('content-type', contentType);
  res.setHeader('cache-control', 'no-cache, max-age=0');
  res.setHeader('x-content-type-options', 'nosniff');
}

/** Writes an answer as is: `res.end`, not `res.send`, so express neither rewrites the charset nor adds an ETag. */
async function write(res: Response, out: AdminResponse): Promise<void> {
  res.status(out.status);
  commonHeaders(res, out.contentType);
  for (const [name, value] of Object.entries(out.headers ?? {})) res.setHeader(name, value);
  if (out.after) res.once('finish', out.after);
  if (typeof out.body === 'string' || Buffer.isBuffer(out.body)) res.end(out.body);
  else await writeChunks(res, out.body);
}

/** How long a streamed render may hold the event loop before other work gets a turn. */
const SLICE_MS = 4;

/** Resolves once `res` can take more (or is gone). */
function drained(res: Response): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * A streamed body, piece by piece: the render runs only as fast as the client reads
 * (waiting for `drain`, so at most a socket buffer and one piece are held), and gives the
 * event loop back every `SLICE_MS`, so `/ready` and the data plane are answered meanwhile.
 * A client that goes away stops the render.
 */
async function writeChunks(res: Response, chunks: Chunks): Promise<void> {
  let sliceStart = performance.now();
  for (const chunk of chunks) {
    if (res.destroyed) return;
    // An empty piece only marks a point where the render may pause (see views/stats).
    if (chunk && !res.write(chunk)) await drained(res);
    if (performance.now() - sliceStart >= SLICE_MS) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
  }
  if (!res.destroyed) res.end();
}

function isLoopback(host: string): boolean {
  return host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** Where the bootstrap puts the admin listener (`admin.address.socket_address`). */
export function adminAddressOf(ctx: ServerContext): { host: string; port: number } {
  const admin = (ctx.store.state.bootstrap?.config.admin ?? {}) as {
    address?: { socket_address?: { address?: string; port_value?: number | string } };
  };
  const socket = admin.address?.socket_address;
  return { host: socket?.address ?? '127.0.0.1', port: Number(socket?.port_value ?? 0) };
}

function closeGracefully(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
    // A client that keeps a connection busy (an open stream) must not hold shutdown hostage.
    setTimeout(() => server.closeAllConnections(), 1000).unref();
  });
}

/**
 * Starts the admin listener where the bootstrap says; resolves to the bound `ip:port`.
 * `table` is the endpoint list (tests pass their own). The admin only reads the context:
 * what its endpoints show is filled by the edges of `src/edges/start.ts`.
 */
export async function startAdmin(
  ctx: ServerContext,
  table: readonly HandlerDescriptor[] = handlers,
): Promise<string> {
  const log = ctx.log.get('admin');

  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  const accessLog = adminAccessLog(ctx);
  if (accessLog) app.use(accessLog);
  app.use(readAdminBody((res) => void write(res, text('bad request body: larger than 1mb\n', 413))));
  app.use(async (req: Request, res: Response) => {
    const path = req.originalUrl.split('?')[0] ?? '';
    try {
      const routed = await routeAdmin(
        table,
        {
          method: req.method,
          url: req.originalUrl,
          body: typeof req.body === 'string' ? req.body : '',
          contentType: req.get('content-type') ?? '',
        },
        ctx,
      );
      if (routed.kind === 'answer') return await write(res, routed.response);
      commonHeaders(res, 'text/plain; charset=UTF-8');
      routed.handler.stream?.(routed.req, res, ctx);
    } catch (err) {
      log.error({ err, path }, 'admin handler failed');
      if (res.headersSent) res.destroy();
      else
        await write(res, text(`internal error while handling ${path}; the proxy log has the details\n`, 500));
    }
  });

  // Whatever else fails before a handler runs: answered plainly, never with a stack trace.
  app.use((_err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    void write(res, text('bad request\n', 400));
  });

  // A unix socket: reachable only through the file system, with the socket file's mode.
  const pipe = adminPipeOf(ctx.store.state.bootstrap?.config.admin as JsonObject | undefined);
  if (pipe) {
    const server = http.createServer(app);
    await listenOnPipe(server, pipe);
    ctx.onShutdown(() => closeGracefully(server));
    log.info(
      { path: pipe.path, mode: pipe.mode?.toString(8) ?? 'abstract' },
      'admin listening on a unix socket',
    );
    return pipe.path;
  }
  const { host, port } = adminAddressOf(ctx);
  if (!isLoopback(host)) {
    log.warn(
      { address: host },
      `admin interface bound to non-loopback address ${host}: anyone who reaches it can shut the proxy down ` +
        'and read its configuration; bind admin.address.socket_address to 127.0.0.1 or firewall it',
    );
  }
  // A hot-restart child takes the parent's admin socket over (the parent stops accepting on
  // it once sent), so the admin is never refused either. Without the restarter's IPC channel
  // (an epoch started directly) it binds beside the parent's instead: SO_REUSEPORT on both.
  const inherited = port === 0 ? null : await ctx.sockets.adopt(socketKey(host, port));
  const server = inherited ? app.listen(inherited) : app.listen({ port, host, reusePort: true });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  ctx.onShutdown(() => closeGracefully(server));
  const bound = server.address() as AddressInfo;
  ctx.sockets.offer(socketKey(bound.address, bound.port), server, {
    stop: () => server.close(),
    // The socket handed over is closed everywhere once that epoch is gone: bind it again.
    resume: () => {
      server.once('error', (err) =>
        log.error({ err }, 'admin: cannot listen again after a failed hot restart'),
      );
      server.listen({ port: bound.port, host: bound.address, reusePort: true });
    },
  });
  return hostKey(bound.address, bound.port);
}
