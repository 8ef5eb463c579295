import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The native socket helper (`native/sockopt.c`, built by `npm ci`): what node:net cannot do. */
export interface SocketHelper {
  /** Where a NAT rule's client dialled before it was sent here; null where no rule did. */
  originalDst(fd: number): { address: string; port: number } | null;
  /** A bound TCP socket's fd, with IP_TRANSPARENT, IP_FREEBIND or SO_REUSEPORT set before bind(). */
  bindSocket(host: string, port: number, transparent: boolean, freebind: boolean, reusePort: boolean): number;
}

const BUILT = path.join('native', 'build', 'Release', 'sockopt.node');

let loaded: SocketHelper | string | undefined;

/** The addon from the repository root above this module (works from `src/` and `dist/src/`). */
function load(): SocketHelper | string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, BUILT);
    if (existsSync(candidate)) {
      try {
        return createRequire(import.meta.url)(candidate) as SocketHelper;
      } catch (err) {
        return `${candidate} did not load: ${(err as Error).message}`;
      }
    }
    const parent = path.dirname(dir);
    if (parent === dir)
      return `${BUILT} was not built (npm ci builds it with node-gyp; see docs/dependencies.md)`;
    dir = parent;
  }
}

/**
 * The helper, loaded on first use (a proxy whose listeners need none of it never loads it), or
 * why it cannot be had: the sentence a refusal quotes.
 */
export function socketHelper(): SocketHelper | string {
  loaded ??= process.platform === 'linux' ? load() : `it is Linux-only (this is ${process.platform})`;
  return loaded;
}

/**
 * A listening handle for `net.Server.listen(handle)` on a socket the helper bound. As a handle
 * (not `{ fd }`), node:net listens on it in this process even in a cluster worker, which
 * would otherwise ask the primary to bind an fd number that means nothing there.
 */
export function boundHandle(fd: number): object {
  return (new net.Socket({ fd, readable: false, writable: false }) as unknown as { _handle: object })._handle;
}
