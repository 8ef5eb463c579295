/** nginx (Debian's package) as a differential peer: one server block in a temporary prefix. */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';

/** Whether nginx is installed (scripts/install-system-deps.sh installs nginx-light). */
export const hasNginx = spawnSync('nginx', ['-v']).error === undefined;

export const NO_NGINX = 'nginx is not installed (scripts/install-system-deps.sh installs nginx-light)';

export async function waitForPort(port: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listened on ${port} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface Nginx {
  port: number;
  stop(): void;
}

/**
 * Starts nginx with one `server` on 127.0.0.1 whose body (locations) is `locations`;
 * `listenFlags` go on its `listen` line (`http2` for h2c with prior knowledge, `ssl`) and
 * `httpDirectives` in its `http` block (no access log unless they name one).
 */
export async function startNginx(
  locations: string,
  listenFlags = '',
  httpDirectives = 'access_log off;',
): Promise<Nginx> {
  const dir = mkdtempSync(join(tmpdir(), 'nginx-'));
  const port = await freePort();
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']
    .map((n) => `${n}_temp_path ${join(dir, n)};`)
    .join('\n');
  writeFileSync(
    join(dir, 'nginx.conf'),
    `daemon off;
master_process off;
worker_processes 1;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} info;
events { worker_connections 256; }
http {
  ${httpDirectives}
  ${temp}
  server {
    listen 127.0.0.1:${port}${listenFlags ? ` ${listenFlags}` : ''};
    ${locations}
  }
}
`,
  );
  return daemon('nginx', ['-p', dir, '-e', join(dir, 'error.log'), '-c', join(dir, 'nginx.conf')], dir, port);
}

/**
 * Runs `command` until `stop()` (which also removes its directory `dir`), once it listens on
 * `port`; a daemon that does not listen within 5 s is stopped and the wait throws.
 */
export async function daemon(command: string, args: string[], dir: string, port: number): Promise<Nginx> {
  const child: ChildProcess = spawn(command, args, { stdio: 'ignore' });
  const stop = () => {
    child.kill();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitForPort(port, 5000);
  } catch (err) {
    stop();
    throw err;
  }
  return { port, stop };
}
