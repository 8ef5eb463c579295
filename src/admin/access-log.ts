import type { NextFunction, Request, Response } from 'express';
import type { ServerContext } from '../context.js';
import { openAccessLogFile } from '../dataplane/access-log/file-sink.js';
import { compileTextFormat, DEFAULT_FORMAT } from '../dataplane/access-log/format.js';
import { joinHostPort, newStreamInfo } from '../dataplane/access-log/stream-info.js';
import type { HttpRequest } from '../dataplane/codec/request.js';

type Middleware = (req: Request, res: Response, next: NextFunction) => void;

const format = compileTextFormat(DEFAULT_FORMAT);

function requestOf(req: Request): HttpRequest {
  const headers: string[] = [];
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2)
    headers.push((raw[i] as string).toLowerCase(), raw[i + 1] as string);
  return {
    method: req.method,
    path: req.originalUrl,
    authority: (req.headers.host ?? '').toLowerCase(),
    scheme: 'http',
    headers,
    protocol: req.httpVersion === '1.0' ? 'HTTP/1.0' : 'HTTP/1.1',
    remoteIp: req.socket.remoteAddress ?? '',
    contentLength: Number(req.headers['content-length'] ?? 0),
    hasBody: req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined,
  };
}

/**
 * `admin.access_log_path`: one line per admin request in the reference's default format,
 * written through the same buffered, reopenable files as the data plane's access logs.
 * Null when the path is unset or the null device; a path that cannot be opened is logged
 * and the admin serves without it.
 */
export function adminAccessLog(ctx: ServerContext): Middleware | null {
  const admin = (ctx.store.state.bootstrap?.config.admin ?? {}) as { access_log_path?: unknown };
  const path = typeof admin.access_log_path === 'string' ? admin.access_log_path : '';
  if (!path || path === '/dev/null') return null;
  let file: ReturnType<typeof openAccessLogFile>;
  try {
    file = openAccessLogFile(path, ctx.options.fileFlushIntervalMsec);
  } catch (err) {
    ctx.log.get('admin').error({ path }, `cannot open admin.access_log_path: ${(err as Error).message}`);
    return null;
  }
  ctx.onShutdown(() => file.release());
  return (req, res, next) => {
    const info = newStreamInfo(
      requestOf(req),
      joinHostPort(req.socket.remoteAddress, req.socket.remotePort),
      joinHostPort(req.socket.localAddress, req.socket.localPort),
    );
    res.once('close', () => {
      info.endedAt = performance.now();
      info.responseCode = res.headersSent ? res.statusCode : 0;
      info.bytesReceived = info.request?.contentLength ?? 0;
      info.bytesSent = Number(res.getHeader('content-length') ?? 0);
      file.write(format(info));
    });
    next();
  };
}
