import type { NextFunction, Request, Response } from 'express';

/** Largest request body the admin reads (runtime_modify forms, tap configs). */
export const BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * Reads an admin request's body as UTF-8 text into `req.body`. A body past the limit is
 * answered 413 at once and the connection closed: declared by its Content-Length before a
 * byte of it is read, or while it streams. (A body parser that reads the rest off first
 * answers a client that declared 2 MB and sends nothing, or streams without end, never.)
 */
export function readAdminBody(tooLarge: (res: Response) => void) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const refuse = () => {
      res.setHeader('connection', 'close');
      tooLarge(res);
      res.once('finish', () => req.socket.destroy());
    };
    if (Number(req.headers['content-length'] ?? 0) > BODY_LIMIT_BYTES) {
      refuse();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let refused = false;
    req.on('data', (chunk: Buffer) => {
      if (refused) return;
      size += chunk.length;
      if (size > BODY_LIMIT_BYTES) {
        refused = true;
        req.pause();
        refuse();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (refused) return;
      req.body = Buffer.concat(chunks, size).toString('utf8');
      next();
    });
    req.on('error', () => req.socket.destroy());
  };
}
