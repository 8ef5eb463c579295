/**
 * The admin under large renders, in a real serving process (`--concurrency 1`) with 10,000
 * STATIC clusters: `/stats` in text, JSON and Prometheus (the first Prometheus scrape, which
 * extracts tags for every name, apart), time to the last byte; `/ready` latency while
 * `/stats?format=prometheus` is scraped in a loop (does the render block the event loop?);
 * and the RSS growth while a `/config_dump` is served (is it streamed?).
 * `BENCH_PROXY_ROOT` runs another checkout's proxy (under tsx) for a before/after comparison;
 * `BENCH_ADMIN_CONCURRENCY=2` measures `/stats` merged from workers.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { quantile } from './lib/load.js';
import { type Peer, spawnPeer } from './lib/processes.js';
import type { BenchRow } from './types.js';

const CLUSTERS = 10_000;
/** How long `/ready` is probed while Prometheus scrapes run back to back. */
const PROBE_SECONDS = 8;
const PROBE_EVERY_MS = 10;

const compiled = import.meta.url.includes('/dist/');
const repoRoot = fileURLToPath(new URL(compiled ? '../../' : '../', import.meta.url));

function bootstrap(): object {
  const clusters = Array.from({ length: CLUSTERS }, (_, i) => ({
    name: `service_${i}`,
    type: 'STATIC',
    connect_timeout: '0.25s',
    load_assignment: {
      cluster_name: `service_${i}`,
      endpoints: [
        {
          lb_endpoints: [
            {
              endpoint: {
                address: {
                  socket_address: { address: `10.0.${(i >> 8) & 255}.${i & 255}`, port_value: 8080 },
                },
              },
            },
          ],
        },
      ],
    },
  }));
  return {
    admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
    static_resources: { clusters },
  };
}

/** Worker processes of the proxy measured: 1 (in-process) unless `BENCH_ADMIN_CONCURRENCY` says otherwise. */
const CONCURRENCY = process.env.BENCH_ADMIN_CONCURRENCY ?? '1';

/** This proxy (or `BENCH_PROXY_ROOT`'s) serving `config`. */
function startProxy(config: string, adminPath: string): Peer {
  const args = ['-c', config, '--admin-address-path', adminPath, '--concurrency', CONCURRENCY];
  const other = process.env.BENCH_PROXY_ROOT;
  if (!other && compiled)
    return spawnPeer('proxy', process.execPath, ['bin/proxy.js', ...args], undefined, repoRoot);
  // A tree from before 146f603 (BENCH_PROXY_ROOT, to measure against) has the command in src/cli/.
  const root = other ?? repoRoot;
  const entry = ['src/main.ts', 'src/cli/main.ts'].find((p) => existsSync(join(root, p))) ?? 'src/main.ts';
  const main = pathToFileURL(join(root, entry)).href;
  const code = `const { main } = await import(${JSON.stringify(main)}); await main(process.argv.slice(1));`;
  return spawnPeer(
    'proxy',
    process.execPath,
    ['--import', 'tsx', '--input-type=module', '-e', code, '--', ...args],
    undefined,
    other ?? repoRoot,
  );
}

async function whenReady(peer: Peer, adminPath: string, timeoutMs = 120_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (peer.child.exitCode !== null) throw new Error(`proxy exited: ${peer.output()}`);
    if (Date.now() > deadline) throw new Error(`proxy not ready after ${timeoutMs} ms: ${peer.output()}`);
    let admin = '';
    try {
      admin = readFileSync(adminPath, 'utf8').trim();
    } catch {}
    if (admin && (await fetch(`http://${admin}/ready`).catch(() => undefined))?.status === 200) {
      return `http://${admin}`;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

const agent = new Agent({ keepAlive: true, maxSockets: 4 });

/** GETs `url` and reads the body through without keeping it: milliseconds to the last byte, and bytes. */
function timedGet(url: string): Promise<{ ms: number; bytes: number }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    get(url, { agent }, (res) => {
      let bytes = 0;
      res.on('data', (d: Buffer) => {
        bytes += d.length;
      });
      res.on('end', () => {
        if (res.statusCode !== 200) reject(new Error(`${url}: ${res.statusCode}`));
        else resolve({ ms: performance.now() - t0, bytes });
      });
      res.on('error', reject);
    }).on('error', reject);
  });
}

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) * 1024;
}

/** CPU time (user + system) of `pid` so far, in ms. */
function cpuMsOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

/** CPU time of `pid` and of its children (the workers with `--concurrency N`), in ms. */
function cpuMsTree(pid: number): { primary: number; workers: number } {
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {}
  return { primary: cpuMsOf(pid), workers: children.reduce((n, c) => n + cpuMsOf(c), 0) };
}

/** The peak RSS of `pid` above its RSS at the start, while `work` runs. */
async function peakRssGrowth(pid: number, work: () => Promise<unknown>): Promise<number> {
  const before = rssOf(pid);
  let peak = before;
  const timer = setInterval(() => {
    peak = Math.max(peak, rssOf(pid));
  }, 5);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  return Math.max(peak, rssOf(pid)) - before;
}

/** `/ready` latencies (sorted) probed every `PROBE_EVERY_MS` for `seconds`, while `loop` (if any) is fetched back to back. */
async function probeReady(
  admin: string,
  seconds: number,
  loop: string | null,
): Promise<{ latencies: number[]; scrapes: number }> {
  const latencies: number[] = [];
  let scrapes = 0;
  const end = performance.now() + seconds * 1000;
  const looping = (async () => {
    while (loop && performance.now() < end) {
      await timedGet(loop);
      scrapes += 1;
    }
  })();
  while (performance.now() < end) {
    latencies.push((await timedGet(`${admin}/ready`)).ms);
    await new Promise((r) => setTimeout(r, PROBE_EVERY_MS));
  }
  await looping;
  latencies.sort((a, b) => a - b);
  return { latencies, scrapes };
}

const bound = (name: string, value: number, unit: string, target: number, note = ''): BenchRow => ({
  name,
  value,
  unit,
  ratio: value / target,
  note: `target <= ${target} ${unit} (ratio = value / target): ${value <= target ? 'met' : 'missed'}${note ? `; ${note}` : ''}`,
});

/** The admin part of `npm run bench`. */
export async function benchAdmin(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-admin-'));
  const config = join(dir, 'bootstrap.json');
  const adminPath = join(dir, 'admin');
  writeFileSync(config, JSON.stringify(bootstrap()));
  const peer = startProxy(config, adminPath);
  try {
    const admin = await whenReady(peer, adminPath);
    const pid = peer.child.pid as number;
    const rows: BenchRow[] = [];
    const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
    const cpu0 = cpuMsTree(pid);
    const first = await timedGet(`${admin}/stats?format=prometheus`);
    const cpu1 = cpuMsTree(pid);
    const firstCpu = `CPU ${cpu1.primary - cpu0.primary} ms primary, ${cpu1.workers - cpu0.workers} ms workers`;
    rows.push(
      bound('/stats prometheus, first scrape', first.ms, 'ms', 500, `${mb(first.bytes)}; ${firstCpu}`),
    );
    for (const [name, query] of [
      ['text', ''],
      ['json', '?format=json'],
      ['prometheus', '?format=prometheus'],
    ] as const) {
      const runs: number[] = [];
      const cpu: Array<{ primary: number; workers: number }> = [];
      let bytes = 0;
      for (let i = 0; i < 3; i++) {
        const before = cpuMsTree(pid);
        const r = await timedGet(`${admin}/stats${query}`);
        const after = cpuMsTree(pid);
        cpu.push({ primary: after.primary - before.primary, workers: after.workers - before.workers });
        runs.push(r.ms);
        bytes = r.bytes;
      }
      runs.sort((a, b) => a - b);
      const median = (xs: number[]) => xs.sort((a, b) => a - b)[1]!;
      const cpuNote = `CPU median ${median(cpu.map((c) => c.primary))} ms primary, ${median(cpu.map((c) => c.workers))} ms workers`;
      rows.push(bound(`/stats ${name} (median of 3)`, runs[1]!, 'ms', 500, `${mb(bytes)}; ${cpuNote}`));
    }

    // /ready every 10 ms, alone (what the machine gives), then while Prometheus scrapes run back to back.
    const idle = await probeReady(admin, PROBE_SECONDS / 2, null);
    rows.push({
      name: '/ready p99, admin otherwise idle',
      value: quantile(idle.latencies, 0.99),
      unit: 'ms',
      note: `context for the next row: ${idle.latencies.length} probes, max ${idle.latencies.at(-1)!.toFixed(1)} ms`,
    });
    const { latencies, scrapes } = await probeReady(admin, PROBE_SECONDS, `${admin}/stats?format=prometheus`);
    rows.push(
      bound(
        '/ready p99 during a /stats?format=prometheus loop',
        quantile(latencies, 0.99),
        'ms',
        10,
        `${latencies.length} probes, ${scrapes} scrapes, max ${latencies.at(-1)!.toFixed(1)} ms`,
      ),
    );

    const dump = { ms: 0, bytes: 0 };
    const growth = await peakRssGrowth(pid, async () =>
      Object.assign(dump, await timedGet(`${admin}/config_dump`)),
    );
    rows.push(
      bound(
        'RSS growth while serving /config_dump',
        growth / 1e6,
        'MB',
        64,
        `${mb(dump.bytes)} in ${dump.ms.toFixed(0)} ms`,
      ),
    );
    const clusters = await timedGet(`${admin}/clusters?format=json`);
    rows.push({ name: '/clusters?format=json', value: clusters.ms, unit: 'ms', note: mb(clusters.bytes) });
    return rows;
  } finally {
    agent.destroy();
    await peer.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const row of await benchAdmin()) {
    process.stdout.write(`${row.name}: ${row.value.toFixed(1)} ${row.unit} (${row.note ?? ''})\n`);
  }
}
