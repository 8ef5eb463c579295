/**
 * Starting each peer of the data-plane benchmark as a child process, with its config in a
 * temporary folder, and describing it as a `Target` the load generators aim at.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, type Peer, spawnPeer, waitForPort } from '../lib/processes.js';
import { haproxyConf } from './haproxy.js';
import { reverseProxyConf, upstreamConf } from './nginx.js';
import { type BootstrapOptions, LISTENER_NAME, proxyBootstrap } from './proxy-bootstrap.js';

const compiled = import.meta.url.includes('/dist/');
/** The repository root, from `bench/peers` (tsx) or `dist/bench/peers` (compiled). */
const repoRoot = fileURLToPath(new URL(compiled ? '../../../' : '../../', import.meta.url));

/** A running peer the load generators aim at. */
export interface Target {
  name: string;
  /** HTTP/1.1 URL. */
  url: string;
  /** h2c (prior knowledge) URL, when the peer speaks it. */
  h2Url?: string;
  /** The process whose tree is measured for CPU time and RSS. */
  pid: number;
  /** Measured for HTTP/1.1 requests/s and CPU only (a variant, not a peer of its own). */
  rpsOnly?: boolean;
  /** `http://host:port` of the admin interface (this proxy only). */
  admin?: string;
  stop(): Promise<void>;
}

function scratch(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `bench-${prefix}-`));
}

/** `dir`, when given, is the peer's scratch folder, removed once it stopped. */
function targetOf(peer: Peer, dir: string | undefined, url: string, h2Url?: string): Target {
  return {
    name: peer.name,
    url,
    h2Url,
    pid: peer.child.pid as number,
    async stop() {
      await peer.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** nginx in the foreground with `conf`, its logs and temp files in a scratch prefix folder. */
async function startNginx(
  name: string,
  conf: string,
  port: number,
  url: string,
  h2Url?: string,
  cpus?: string,
): Promise<Target> {
  const dir = scratch('nginx');
  mkdirSync(join(dir, 'logs'));
  mkdirSync(join(dir, 'tmp'));
  writeFileSync(join(dir, 'nginx.conf'), conf);
  const peer = spawnPeer(
    name,
    'nginx',
    ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'],
    cpus,
  );
  const target = targetOf(peer, dir, url, h2Url);
  try {
    await waitForPort(peer, port);
  } catch (err) {
    const log = join(dir, 'logs', 'error.log');
    const detail = existsSync(log) ? readFileSync(log, 'utf8') : '';
    await target.stop();
    throw new Error(`${(err as Error).message} ${detail}`);
  }
  return target;
}

/** The nginx upstream (one worker, fixed body; h2c with `http2`) on a free port; returns the port too. */
export async function startUpstream(cpus?: string, http2 = false): Promise<{ target: Target; port: number }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/`;
  return {
    target: await startNginx('direct (no proxy)', upstreamConf(port, http2), port, url, undefined, cpus),
    port,
  };
}

/** nginx as reverse proxy to the upstream. */
export async function startNginxProxy(upstreamPort: number, cpus?: string): Promise<Target> {
  const [port, h2Port] = [await freePort(), await freePort()];
  const conf = reverseProxyConf(port, h2Port, upstreamPort);
  return startNginx('nginx', conf, port, `http://127.0.0.1:${port}/`, `http://127.0.0.1:${h2Port}/`, cpus);
}

/** HAProxy (one thread, or `threads`) to the upstream, in HTTP/2 when `http2Upstream`. */
export async function startHaproxy(
  upstreamPort: number,
  cpus?: string,
  threads = 1,
  http2Upstream = false,
): Promise<Target> {
  const dir = scratch('haproxy');
  const [port, h2Port] = [await freePort(), await freePort()];
  writeFileSync(join(dir, 'haproxy.cfg'), haproxyConf(port, h2Port, upstreamPort, threads, http2Upstream));
  const name = threads === 1 ? 'HAProxy' : `HAProxy nbthread ${threads}`;
  const peer = spawnPeer(name, 'haproxy', ['-f', join(dir, 'haproxy.cfg'), '-db'], cpus);
  const target = targetOf(peer, dir, `http://127.0.0.1:${port}/`, `http://127.0.0.1:${h2Port}/`);
  await waitForPort(peer, port).catch(async (err) => {
    await target.stop();
    throw err;
  });
  return target;
}

/** Resolves with the first stdout line matching `pattern`'s group, or rejects when the peer exits first. */
export function announced(peer: Peer, pattern: RegExp, timeoutMs = 15000): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${peer.name} did not start: ${peer.output()}`)),
      timeoutMs,
    );
    const check = () => {
      const match = pattern.exec(peer.output());
      if (match) {
        clearTimeout(timer);
        resolve(match[1] as string);
      }
    };
    peer.child.stdout?.on('data', check);
    peer.child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${peer.name} exited with ${code}: ${peer.output()}`));
    });
  });
}

/** `node [tsx] <script> args` for a script beside this file (compiled or not). */
export function nodeScript(name: string, args: string[]): [string, string[]] {
  const script = fileURLToPath(new URL(`./${name}.${compiled ? 'js' : 'ts'}`, import.meta.url));
  return [process.execPath, [...(compiled ? [] : ['--import', 'tsx']), script, ...args]];
}

/** The Node peer: `node:http` + undici `Pool`. */
export async function startNodePeer(upstreamPort: number, cpus?: string): Promise<Target> {
  const peer = spawnPeer(
    'Node undici peer',
    ...nodeScript('node-undici-proxy', [`http://127.0.0.1:${upstreamPort}`]),
    cpus,
  );
  const port = await announced(peer, /listening (\d+)/).catch(async (err) => {
    await peer.stop();
    throw err;
  });
  return targetOf(peer, undefined, `http://127.0.0.1:${port}/`);
}

/** The gRPC server of the gRPC part (`grpc-peer.ts server`); returns its port too. */
export async function startGrpcServer(cpus?: string): Promise<{ target: Target; port: number }> {
  const peer = spawnPeer('direct (no proxy)', ...nodeScript('grpc-peer', ['server']), cpus);
  const port = await announced(peer, /listening (\d+)/).catch(async (err) => {
    await peer.stop();
    throw err;
  });
  return {
    target: targetOf(peer, undefined, `http://127.0.0.1:${port}/`, `http://127.0.0.1:${port}/`),
    port: Number(port),
  };
}

/** Polls the admin address file and `/listeners` until this proxy is LIVE with its listener bound. */
async function whenLive(
  peer: Peer,
  adminPath: string,
  timeoutMs = 20000,
): Promise<{ admin: string; port: number }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (peer.child.exitCode !== null) throw new Error(`${peer.name} exited: ${peer.output()}`);
    if (Date.now() > deadline)
      throw new Error(`${peer.name} not LIVE after ${timeoutMs} ms: ${peer.output()}`);
    const admin = existsSync(adminPath) ? readFileSync(adminPath, 'utf8').trim() : '';
    if (admin) {
      const ready = await fetch(`http://${admin}/ready`).catch(() => undefined);
      if (ready?.status === 200) {
        const json = (await (await fetch(`http://${admin}/listeners?format=json`)).json()) as {
          listener_statuses: Array<{
            name: string;
            local_address: { socket_address: { port_value: number } };
          }>;
        };
        const status = json.listener_statuses.find((s) => s.name === LISTENER_NAME);
        if (status) return { admin: `http://${admin}`, port: status.local_address.socket_address.port_value };
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * This proxy from the build (`node [nodeArgs] bin/proxy.js`), with `--concurrency workers`.
 * `nodeArgs` are Node's own flags, e.g. `--cpu-prof`.
 */
export async function startThisProxy(
  upstreamPort: number,
  workers: number,
  cpus?: string,
  nodeArgs: string[] = [],
  options: BootstrapOptions = {},
): Promise<Target> {
  if (!existsSync(join(repoRoot, 'dist', 'src', 'main.js'))) {
    throw new Error('dist/ is missing: run `npm run build` (or `npm run bench`, which builds) first');
  }
  const dir = scratch('proxy');
  const config = join(dir, 'bootstrap.json');
  const adminPath = join(dir, 'admin');
  writeFileSync(config, JSON.stringify(proxyBootstrap(upstreamPort, options)));
  const args = [
    ...nodeArgs,
    'bin/proxy.js',
    '-c',
    config,
    '--admin-address-path',
    adminPath,
    '--concurrency',
    String(workers),
  ];
  const peer = spawnPeer(`this proxy --concurrency ${workers}`, process.execPath, args, cpus, repoRoot);
  const { admin, port } = await whenLive(peer, adminPath).catch(async (err) => {
    await peer.stop();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  });
  return { ...targetOf(peer, dir, `http://127.0.0.1:${port}/`, `http://127.0.0.1:${port}/`), admin };
}
