/**
 * What one access log costs on the hot path: this proxy (`--concurrency 1`, from the sources
 * under tsx) in front of the nginx upstream, with and without an HCM access log in the
 * reference's default format, alternating runs of `wrk -t1 -c50 -d<S>s` after a 1 s warm-up.
 * Run: `node --import tsx bench/access-log.ts [rounds] [seconds]`. Needs nginx and wrk.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, wrk } from './lib/load.js';
import { cpuSeconds, findExecutable } from './lib/processes.js';
import { LISTENER_NAME, proxyBootstrap } from './peers/proxy-bootstrap.js';
import { startUpstream } from './peers/start.js';

const repoRoot = fileURLToPath(new URL('../', import.meta.url));
const rounds = Number(process.argv[2] ?? 3);
const seconds = Number(process.argv[3] ?? 4);
const pin = findExecutable('taskset') && process.env.BENCH_PIN !== '0';

interface Running {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

async function startProxy(upstreamPort: number, accessLog: string | null): Promise<Running> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-access-log-'));
  const bootstrap = proxyBootstrap(upstreamPort);
  // The one HCM of the bench bootstrap, as `proxyBootstrap` builds it.
  const hcm = (
    bootstrap as {
      static_resources: {
        listeners: Array<{
          filter_chains: Array<{ filters: Array<{ typed_config: Record<string, unknown> }> }>;
        }>;
      };
    }
  ).static_resources.listeners[0]!.filter_chains[0]!.filters[0]!.typed_config;
  if (accessLog)
    hcm.access_log = [
      {
        name: 'envoy.access_loggers.file',
        typed_config: {
          '@type': 'type.googleapis.com/envoy.config.accesslog.v2.FileAccessLog',
          path: accessLog,
        },
      },
    ];
  writeFileSync(join(dir, 'bootstrap.json'), JSON.stringify(bootstrap));
  const adminPath = join(dir, 'admin');
  const node = [
    process.execPath,
    '--import',
    'tsx',
    '--input-type=module',
    '-e',
    "import { main } from './src/main.ts'; await main(process.argv.slice(1));",
    '--',
    '-c',
    join(dir, 'bootstrap.json'),
    '--admin-address-path',
    adminPath,
    '--concurrency',
    '1',
    '-l',
    'warning',
    // Two proxies run side by side: neither needs the hot-restart domain socket.
    '--disable-hot-restart',
    '--drain-time-s',
    '1',
  ];
  const argv = pin ? ['taskset', '-c', '1', ...node] : node;
  const child = spawn(argv[0] as string, argv.slice(1), {
    cwd: repoRoot,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const deadline = Date.now() + 30000;
  for (;;) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error('proxy did not start');
    if (existsSync(adminPath) && readFileSync(adminPath, 'utf8').trim()) {
      const admin = `http://${readFileSync(adminPath, 'utf8').trim()}`;
      const ready = await fetch(`${admin}/ready`).catch(() => null);
      if (ready?.status === 200) {
        const listeners = (await (await fetch(`${admin}/listeners?format=json`)).json()) as {
          listener_statuses: Array<{
            name: string;
            local_address: { socket_address: { port_value: number } };
          }>;
        };
        const port = listeners.listener_statuses.find((l) => l.name === LISTENER_NAME)?.local_address
          .socket_address.port_value;
        return {
          url: `http://127.0.0.1:${port}/`,
          pid: child.pid as number,
          async stop() {
            const exited = new Promise((r) => child.once('exit', r));
            child.kill('SIGTERM');
            // The drain waits for the load generator's connections the kernel may still hold.
            const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
            await exited;
            clearTimeout(timer);
            rmSync(dir, { recursive: true, force: true });
          },
        };
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

const logDir = mkdtempSync(join(tmpdir(), 'bench-access-log-file-'));
const logFile = join(logDir, 'access.log');
const upstream = await startUpstream(pin ? '0' : undefined);
const variants = [
  {
    name: 'no access log',
    proxy: await startProxy(upstream.port, null),
    rps: [] as number[],
    cpu: [] as number[],
  },
  {
    name: 'one access log (default format)',
    proxy: await startProxy(upstream.port, logFile),
    rps: [] as number[],
    cpu: [] as number[],
  },
  {
    name: 'one access log to /dev/null (format, no disk)',
    proxy: await startProxy(upstream.port, '/dev/null'),
    rps: [] as number[],
    cpu: [] as number[],
  },
];
try {
  for (let round = 0; round < rounds; round++) {
    // Alternate which runs first, so neither always follows the other.
    for (const v of round % 2 === 0 ? variants : [...variants].reverse()) {
      await wrk(v.proxy.url, 50, 1, pin ? '0' : undefined);
      const before = cpuSeconds(v.proxy.pid);
      const r = await wrk(v.proxy.url, 50, seconds, pin ? '0' : undefined);
      const after = cpuSeconds(v.proxy.pid);
      if (r.errors > 0) throw new Error(`${v.name}: ${r.errors} errors`);
      v.rps.push(r.perSecond);
      // CPU per request: steadier than req/s on a machine other work shares.
      v.cpu.push(((after.user + after.sys - before.user - before.sys) / r.requests) * 1e6);
      process.stderr.write(
        `round ${round + 1}: ${v.name}: ${Math.round(r.perSecond)} req/s, ${(v.cpu.at(-1) ?? 0).toFixed(1)} µs CPU/request\n`,
      );
    }
  }
} finally {
  for (const v of variants) await v.proxy.stop();
  await upstream.target.stop();
}
const base = median(variants[0]?.rps ?? []);
const baseCpu = median(variants[0]?.cpu ?? []);
const pct = (x: number, of: number) => `${x >= of ? '+' : ''}${((x / of - 1) * 100).toFixed(1)}%`;
console.log(
  `| variant | req/s (median of ${rounds}) | vs no log | CPU µs/request (median) | vs no log | req/s runs |`,
);
console.log('| --- | ---: | ---: | ---: | ---: | --- |');
for (const v of variants) {
  const m = median(v.rps);
  const c = median(v.cpu);
  console.log(
    `| ${v.name} | ${Math.round(m)} | ${pct(m, base)} | ${c.toFixed(1)} | ${pct(c, baseCpu)} | ${v.rps.map(Math.round).join(', ')} |`,
  );
}
console.log(`access log bytes written: ${existsSync(logFile) ? statSync(logFile).size : 0}`);
rmSync(logDir, { recursive: true, force: true });
