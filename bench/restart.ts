/**
 * The `restart` part: requests lost across 10 restarts under wrk load (16 keep-alive
 * connections), this proxy's hot restart (`proxy restarter`, SIGHUP) beside HAProxy's
 * `-sf` reload measured the same way. Lost means what wrk counts as an error: a refused
 * connection, a read or write error, a timeout, a non-2xx answer. Both get one restart every
 * two seconds for the same wrk run; the upstream is a Node `http` server in this process.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { JsonObject } from '../events/index.js';
import { type LoadResult, wrk } from './lib/load.js';
import { findExecutable, freePort } from './lib/processes.js';
import { haproxyConf } from './peers/haproxy.js';
import { proxyBootstrap } from './peers/proxy-bootstrap.js';
import type { BenchRow } from './types.js';

const RESTARTS = 10;
const EVERY_MS = 2000;
/** wrk runs over every restart, with a second of load before the first and after the last. */
const WRK_SECONDS = (RESTARTS * EVERY_MS) / 1000 + 4;

const compiled = import.meta.url.includes('/dist/');
const repoRoot = fileURLToPath(new URL(compiled ? '../../' : '../', import.meta.url));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** Runs wrk against `url` while `restart(i)` runs every two seconds; how many restarts happened. */
async function underLoad(
  url: string,
  restart: (i: number) => Promise<void>,
): Promise<LoadResult & { restarts: number }> {
  const load = wrk(url, 16, WRK_SECONDS);
  await sleep(1000);
  let restarts = 0;
  for (let i = 1; i <= RESTARTS; i++) {
    const started = Date.now();
    await restart(i);
    restarts = i;
    await sleep(Math.max(0, EVERY_MS - (Date.now() - started)));
  }
  return { ...(await load), restarts };
}

function stopped(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** This proxy under `proxy restarter`, on fixed ports so every epoch takes the same sockets over. */
async function thisProxy(upstreamPort: number, dir: string): Promise<BenchRow> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const bootstrap = proxyBootstrap(upstreamPort) as {
    admin: { address: JsonObject };
    static_resources: { listeners: Array<{ address: JsonObject }> };
  };
  const at = (p: number) => ({ socket_address: { address: '127.0.0.1', port_value: p } });
  bootstrap.admin.address = at(adminPort);
  for (const listener of bootstrap.static_resources.listeners) listener.address = at(port);
  const config = join(dir, 'bootstrap.json');
  writeFileSync(config, JSON.stringify(bootstrap));
  const args = [
    'restarter',
    '--',
    '-c',
    config,
    '--concurrency',
    '1',
    '--drain-time-s',
    '1',
    '--parent-shutdown-time-s',
    '5',
    '--socket-path',
    join(dir, 'hot-restart'),
    '--log-level',
    'warning',
  ];
  const node = compiled
    ? ['bin/proxy.js', ...args]
    : [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        "import { main } from './src/main.ts'; await main(process.argv.slice(1));",
        '--',
        ...args,
      ];
  const restarter = spawn(process.execPath, node, { cwd: repoRoot, stdio: ['ignore', 'ignore', 'pipe'] });
  let output = '';
  restarter.stderr?.on('data', (d: Buffer) => {
    output = (output + d.toString()).slice(-4000);
  });
  const liveEpoch = async () => {
    const res = await fetch(`http://127.0.0.1:${adminPort}/server_info`).catch(() => null);
    if (!res) return -1;
    const info = (await res.json()) as { state: string; command_line_options: { restart_epoch: number } };
    return info.state === 'LIVE' ? info.command_line_options.restart_epoch : -1;
  };
  try {
    await until(async () => (await liveEpoch()) === 0, `this proxy LIVE: ${output}`);
    const result = await underLoad(`http://127.0.0.1:${port}/`, async (epoch) => {
      restarter.kill('SIGHUP');
      await until(async () => (await liveEpoch()) === epoch, `epoch ${epoch} LIVE: ${output}`);
    });
    return {
      name: `requests lost across ${result.restarts} hot restarts`,
      value: result.errors,
      unit: 'requests',
      note: `this proxy (proxy restarter, SIGHUP, --drain-time-s 1): ${result.requests} requests in ${WRK_SECONDS} s`,
    };
  } finally {
    await stopped(restarter);
  }
}

/** HAProxy (one thread), reloaded as its docs say: a new process with `-sf <old pid>`. */
async function haproxy(executable: string, upstreamPort: number, dir: string): Promise<BenchRow> {
  const [port, h2Port] = [await freePort(), await freePort()];
  const config = join(dir, 'haproxy.cfg');
  writeFileSync(config, haproxyConf(port, h2Port, upstreamPort));
  const processes: ChildProcess[] = [];
  const start = (extra: string[]) => {
    const child = spawn(executable, ['-f', config, '-db', ...extra], { stdio: 'ignore' });
    processes.push(child);
    return child;
  };
  let current = start([]);
  try {
    await until(
      () =>
        fetch(`http://127.0.0.1:${port}/`).then(
          (r) => r.ok,
          () => false,
        ),
      'HAProxy listening',
    );
    const result = await underLoad(`http://127.0.0.1:${port}/`, async () => {
      current = start(['-sf', String(current.pid)]);
      // The new process binds, then tells the old one to finish: give it the time to start.
      await sleep(200);
    });
    return {
      name: `requests lost across ${result.restarts} reloads`,
      value: result.errors,
      unit: 'requests',
      note: `HAProxy -sf (new process, old one finishes): ${result.requests} requests in ${WRK_SECONDS} s`,
    };
  } finally {
    await Promise.all(processes.map(stopped));
  }
}

export async function benchRestart(): Promise<BenchRow[]> {
  const [wrkPath, haproxyPath] = [findExecutable('wrk'), findExecutable('haproxy')];
  if (!wrkPath || !haproxyPath) throw new Error('needs wrk and haproxy (apt-get install wrk haproxy)');
  const upstream = http.createServer((req, res) => {
    req.resume();
    res.end('ok');
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const upstreamPort = (upstream.address() as AddressInfo).port;
  const dir = mkdtempSync(join(tmpdir(), 'bench-restart-'));
  try {
    return [await thisProxy(upstreamPort, dir), await haproxy(haproxyPath, upstreamPort, dir)];
  } finally {
    upstream.closeAllConnections();
    upstream.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
