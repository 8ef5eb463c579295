import { chmodSync, lstatSync, unlinkSync } from 'node:fs';
import type { Server } from 'node:http';
import type { JsonObject } from '../../events/index.js';

/** `admin.address.pipe`: a unix socket path (`@name`: Linux abstract namespace) and its mode. */
export interface AdminPipe {
  path: string;
  /** Permission bits of the socket file; null for an abstract socket. */
  mode: number | null;
}

/** Owner read/write only: what an unset (0) `mode` means here. */
export const DEFAULT_PIPE_MODE = 0o600;

/** The admin's pipe address, or null when it listens on a socket address. */
export function adminPipeOf(admin: JsonObject | undefined): AdminPipe | null {
  const address = (admin?.address ?? {}) as { pipe?: { path?: unknown; mode?: unknown } };
  const pipe = address.pipe;
  if (!pipe || typeof pipe.path !== 'string' || pipe.path === '') return null;
  if (pipe.path.startsWith('@')) return { path: pipe.path, mode: null };
  const mode = Number(pipe.mode ?? 0);
  return { path: pipe.path, mode: mode > 0 ? mode : DEFAULT_PIPE_MODE };
}

/**
 * Listens on the pipe. The socket file is created with its final mode (the umask is narrowed
 * around the bind, so there is no moment where it is wider), a stale socket file left by a
 * crash is removed first, and the mode is set again after the bind in case the platform
 * ignored the umask. Abstract sockets have no file and no mode.
 */
export async function listenOnPipe(server: Server, pipe: AdminPipe): Promise<void> {
  const target = pipe.path.startsWith('@') ? `\0${pipe.path.slice(1)}` : pipe.path;
  if (pipe.mode !== null) {
    const existing = (() => {
      try {
        return lstatSync(pipe.path);
      } catch {
        return null;
      }
    })();
    if (existing?.isSocket()) unlinkSync(pipe.path);
    else if (existing) throw new Error(`admin pipe '${pipe.path}' exists and is not a socket`);
  }
  const listening = new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  // The primary binds a pipe inside listen(), synchronously: the narrowed umask covers the
  // bind and nothing else the process creates.
  const previous = pipe.mode === null ? null : process.umask(~pipe.mode & 0o777);
  try {
    server.listen(target);
  } finally {
    if (previous !== null) process.umask(previous);
  }
  await listening;
  if (pipe.mode !== null) chmodSync(pipe.path, pipe.mode);
}
