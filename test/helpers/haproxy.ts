/** HAProxy (Debian's package) as a differential peer, run in the foreground on one config. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';
import { daemon } from './nginx.js';

/** Whether haproxy is installed (scripts/install-system-deps.sh installs it). */
export const hasHaproxy = spawnSync('haproxy', ['-v']).error === undefined;

export const NO_HAPROXY = 'haproxy is not installed (scripts/install-system-deps.sh installs it)';

export interface Haproxy {
  port: number;
  stop(): void;
}

/** Starts HAProxy with an h2c (prior knowledge) frontend on a free port, proxying to `upstreamPort` over HTTP/1.1. */
export function startH2cHaproxy(upstreamPort: number): Promise<Haproxy> {
  return startHaproxy(upstreamPort, 'proto h2');
}

/**
 * Starts HAProxy in HTTP mode on a free port (`bindFlags` on its `bind` line; none: HTTP/1),
 * proxying to `upstreamPort` over HTTP/1.1.
 */
export async function startHaproxy(upstreamPort: number, bindFlags = ''): Promise<Haproxy> {
  const dir = mkdtempSync(join(tmpdir(), 'haproxy-'));
  const port = await freePort();
  const config = join(dir, 'haproxy.cfg');
  writeFileSync(
    config,
    `global
  maxconn 100

defaults
  mode http
  timeout connect 5s
  timeout client 10s
  timeout server 10s

frontend front
  bind 127.0.0.1:${port}${bindFlags ? ` ${bindFlags}` : ''}
  default_backend origin

backend origin
  server origin 127.0.0.1:${upstreamPort}
`,
  );
  return daemon('haproxy', ['-db', '-f', config], dir, port);
}
