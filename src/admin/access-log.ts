import type { NextFunction, Request, Response } from 'express';
import type { JsonObject } from '../../events/index.js';
import { Report } from '../bootstrap/report.js';
import type { ServerContext } from '../context-core.js';
import { type AccessLogSpec, compileAccessLogs, startAccessLogs } from '../dataplane/access-log/config.js';
import { compileTextFormat, DEFAULT_FORMAT } from '../dataplane/access-log/format.js';
import { joinHostPort, newStreamInfo } from '../dataplane/access-log/stream-info.js';
import type { HttpRequest } from '../dataplane/codec/request.js';

type Middleware = (req: Request, res: Response, next: NextFunction) => void;

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
 * `admin.access_log_path` (one line per admin request in the reference's default format) and
 * v3's `admin.access_log` (any access logger with its format and filter), written through the
 * same buffered, reopenable sinks as the data plane's access logs. Null when neither is set
 * (or the path is the null device); a file that cannot be opened is logged and left out.
 */
export function adminAccessLog(ctx: ServerContext): Middleware | null {
  const admin = (ctx.store.state.bootstrap?.config.admin ?? {}) as JsonObject;
  const path = typeof admin.access_log_path === 'string' ? admin.access_log_path : '';
  const specs: AccessLogSpec[] = [];
  if (path && path !== '/dev/null')
    specs.push({ path, format: compileTextFormat(DEFAULT_FORMAT), filter: null });
  // Validated with the bootstrap: nothing is left to report here.
  specs.push(...compileAccessLogs(admin.access_log, 'admin.access_log', new Report('admin')));
  const logger = startAccessLogs(specs, ctx);
  if (!logger) return null;
  ctx.onShutdown(() => logger.release());
  return (req, res, next) => {
    const info = newStreamInfo(
      requestOf(req),
      joinHostPort(req.socket.remoteAddress, req.socket.remotePort),
      joinHostPort(req.socket.localAddress, req.socket.localPort),
    );
    res.once('close', () => {
      info.responseCode = res.headersSent ? res.statusCode : 0;
      info.bytesReceived = info.request?.contentLength ?? 0;
      info.bytesSent = Number(res.getHeader('content-length') ?? 0);
      logger.log(info);
    });
    next();
  };
}
