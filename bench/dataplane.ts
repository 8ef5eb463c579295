/**
 * Data plane on loopback: this proxy against HAProxy, nginx and a minimal Node (undici)
 * reverse proxy, all forwarding to one nginx upstream, measured in interleaved rounds
 * (every peer once per round, medians over rounds) and reported as ratios to HAProxy.
 * Figures: HTTP/1.1 requests/s (wrk, closed loop), p50/p99/p99.9 at a fixed rate (h2load --h1
 * --rps), HTTP/2 requests/s (h2load, h2c), CPU time per request and RSS (from /proc).
 * Run alone: `npm run bench -- dataplane`. Knobs: BENCH_ROUNDS (default 3), BENCH_PIN=0
 * (no taskset pinning).
 */
import os from 'node:os';
import { pathToFileURL } from 'node:url';
import { h2loadLatency, h2loadThroughput, median, wrk } from './lib/load.js';
import { cpuSeconds, findExecutable, rssBytes } from './lib/processes.js';
import {
  startHaproxy,
  startNginxProxy,
  startNodePeer,
  startThisProxy,
  startUpstream,
  type Target,
} from './peers/start.js';
import type { BenchRow } from './types.js';

const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const WRK_CONNECTIONS = 50;
const WRK_SECONDS = 4;
const WARM_UP_SECONDS = 1;
const RATE = 2000;
const RATE_CLIENTS = 20;
const RATE_SECONDS = 3;
const H2_CLIENTS = 10;
const H2_STREAMS = 10;
const H2_SECONDS = 2;
const BASELINE = 'HAProxy';
const C1 = 'this proxy --concurrency 1';
const C1_UNPINNED = 'this proxy --concurrency 1, unpinned';
const C2 = 'this proxy --concurrency 2';

/** Per target, one entry per round. */
interface Samples {
  rps: number[];
  cpuPerRequestUs: number[];
  userPerRequestUs: number[];
  sysPerRequestUs: number[];
  p50: number[];
  p99: number[];
  p999: number[];
  h2rps: number[];
  errors: number;
  rss: number;
}

function log(line: string): void {
  process.stderr.write(`  dataplane: ${line}\n`);
}

/** Which tools are there; the upstream (nginx) is indispensable, the rest is skipped with a note. */
function tools(): { notes: string[]; haproxy: boolean; wrk: boolean; h2load: boolean; taskset: boolean } {
  const has = (name: string) => findExecutable(name) !== undefined;
  if (!has('nginx')) {
    throw new Error(
      'nginx is not installed (Debian package nginx); it is the upstream of every data-plane figure',
    );
  }
  const found = { haproxy: has('haproxy'), wrk: has('wrk'), h2load: has('h2load'), taskset: has('taskset') };
  const notes: string[] = [];
  if (!found.haproxy) notes.push('HAProxy skipped, no ratios: install the Debian package haproxy');
  if (!found.wrk) notes.push('requests/s and CPU per request skipped: install the Debian package wrk');
  if (!found.h2load) notes.push('latency and HTTP/2 skipped: install the Debian package nghttp2-client');
  return { notes, ...found };
}

async function measureRound(
  targets: Target[],
  samples: Map<Target, Samples>,
  have: ReturnType<typeof tools>,
  loadCpus?: string,
) {
  for (const t of targets) {
    if (!have.wrk) break;
    const s = samples.get(t) as Samples;
    await wrk(t.url, WRK_CONNECTIONS, WARM_UP_SECONDS, loadCpus);
    const before = cpuSeconds(t.pid);
    const r = await wrk(t.url, WRK_CONNECTIONS, WRK_SECONDS, loadCpus);
    const after = cpuSeconds(t.pid);
    const perRequest = (seconds: number) => (seconds / Math.max(1, r.requests)) * 1e6;
    s.userPerRequestUs.push(perRequest(after.user - before.user));
    s.sysPerRequestUs.push(perRequest(after.sys - before.sys));
    s.cpuPerRequestUs.push(perRequest(after.user + after.sys - before.user - before.sys));
    s.rps.push(r.perSecond);
    s.errors += r.errors;
    log(`${t.name}: ${r.perSecond.toFixed(0)} req/s`);
  }
  for (const t of targets) {
    if (!have.h2load) break;
    if (t.rpsOnly) continue;
    const s = samples.get(t) as Samples;
    const r = await h2loadLatency(t.url, RATE, RATE_CLIENTS, RATE_SECONDS, loadCpus);
    s.p50.push(r.p50);
    s.p99.push(r.p99);
    s.p999.push(r.p999);
    s.errors += r.errors;
    log(
      `${t.name}: p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms, p99.9 ${r.p999.toFixed(2)} ms at ${RATE} req/s`,
    );
  }
  for (const t of targets) {
    if (!have.h2load || !t.h2Url || t.rpsOnly) continue;
    const s = samples.get(t) as Samples;
    const r = await h2loadThroughput(t.h2Url, H2_CLIENTS, H2_STREAMS, H2_SECONDS, loadCpus);
    s.h2rps.push(r.perSecond);
    s.errors += r.errors;
    log(`${t.name}: ${r.perSecond.toFixed(0)} h2 req/s`);
  }
}

/** Table rows: one per figure and target, each with its ratio to HAProxy's figure. */
function rows(targets: Target[], samples: Map<Target, Samples>, setup: string): BenchRow[] {
  const baseline = targets.find((t) => t.name === BASELINE);
  const out: BenchRow[] = [];
  const figure = (
    label: string,
    unit: string,
    pick: (s: Samples) => number[],
    note: (name: string, s: Samples) => string | undefined = () => undefined,
  ) => {
    const base = baseline ? median(pick(samples.get(baseline) as Samples)) : Number.NaN;
    for (const t of targets) {
      const values = pick(samples.get(t) as Samples);
      if (values.length === 0) continue;
      const value = median(values);
      const s = samples.get(t) as Samples;
      const notes = [note(t.name, s), s.errors > 0 ? `${s.errors} failed requests in the runs` : undefined]
        .filter(Boolean)
        .join('; ');
      out.push({
        name: `${label}, ${t.name}`,
        value: Number(value.toPrecision(4)),
        unit,
        ratio: Number.isFinite(base) && base > 0 ? value / base : undefined,
        note: notes || undefined,
      });
    }
  };
  const rpsOf = (name: string) => {
    const t = targets.find((x) => x.name === name);
    return t ? median((samples.get(t) as Samples).rps).toFixed(0) : 'not measured';
  };
  const rpsNotes: Record<string, string> = {
    'direct (no proxy)': `ceiling of the load side; ${setup}`,
    [C1]: 'target >= 0.5x',
    [C1_UNPINNED]: 'like --concurrency 2: on both cores, beside wrk and the upstream',
    [C2]: `target > --concurrency 1 unpinned (${rpsOf(C1_UNPINNED)}), pinned (${rpsOf(C1)})`,
  };
  figure(
    `HTTP/1.1 req/s (wrk -t1 -c${WRK_CONNECTIONS} -d${WRK_SECONDS}s)`,
    'req/s',
    (s) => s.rps,
    (name) => rpsNotes[name],
  );
  figure(`p50 at ${RATE} req/s (h2load --h1, ${RATE_CLIENTS} conns opened 1 ms apart)`, 'ms', (s) => s.p50);
  figure(
    `p99 at ${RATE} req/s (h2load --h1, ${RATE_CLIENTS} conns opened 1 ms apart)`,
    'ms',
    (s) => s.p99,
    (name) => (name === C1 ? 'target <= 1.0x in each run (issue 28)' : undefined),
  );
  figure(
    `p99.9 at ${RATE} req/s (h2load --h1, ${RATE_CLIENTS} conns opened 1 ms apart)`,
    'ms',
    (s) => s.p999,
  );
  figure(`HTTP/2 req/s (h2load -c${H2_CLIENTS} -m${H2_STREAMS}, h2c)`, 'req/s', (s) => s.h2rps);
  figure(
    'CPU per request (utime+stime during wrk)',
    'µs',
    (s) => s.cpuPerRequestUs,
    (name, s) => {
      const split = `user ${median(s.userPerRequestUs).toFixed(1)} + sys ${median(s.sysPerRequestUs).toFixed(1)}`;
      return name === 'direct (no proxy)' ? `the upstream nginx alone; ${split}` : split;
    },
  );
  figure('RSS after the runs (all processes)', 'MB', (s) => [s.rss / 2 ** 20]);
  return out;
}

/** The data-plane part of `npm run bench`. */
export async function benchDataplane(): Promise<BenchRow[]> {
  const have = tools();
  // Two cores: the proxies on CPU 1, load generators and the upstream on CPU 0, so no proxy
  // competes with wrk for its core; --concurrency 2 needs both and is left unpinned.
  const pin = have.taskset && os.cpus().length >= 2 && process.env.BENCH_PIN !== '0';
  const [loadCpus, proxyCpus] = pin ? ['0', '1'] : [undefined, undefined];
  const setup = pin
    ? 'proxies pinned to CPU 1, wrk/h2load/upstream to CPU 0, --concurrency 2 unpinned'
    : 'nothing pinned';
  const started: Target[] = [];
  try {
    const upstream = await startUpstream(loadCpus);
    started.push(upstream.target);
    const port = upstream.port;
    // A peer that fails to start costs its rows (with a note why), not the whole part.
    const start = async (name: string, launch: () => Promise<Target>) => {
      try {
        started.push(await launch());
      } catch (err) {
        have.notes.push(
          `${name} did not start: ${(err as Error).message.replace(/\s+/g, ' ').slice(0, 300)}`,
        );
      }
    };
    if (have.haproxy) await start(BASELINE, () => startHaproxy(port, proxyCpus));
    await start('nginx', () => startNginxProxy(port, proxyCpus));
    await start('Node undici peer', () => startNodePeer(port, proxyCpus));
    await start(C1, () => startThisProxy(port, 1, proxyCpus));
    if (pin)
      await start(C1_UNPINNED, async () => ({
        ...(await startThisProxy(port, 1)),
        name: C1_UNPINNED,
        rpsOnly: true,
      }));
    await start(C2, () => startThisProxy(port, 2));
    const samples = new Map<Target, Samples>(
      started.map((t) => [
        t,
        {
          rps: [],
          cpuPerRequestUs: [],
          userPerRequestUs: [],
          sysPerRequestUs: [],
          p50: [],
          p99: [],
          p999: [],
          h2rps: [],
          errors: 0,
          rss: 0,
        },
      ]),
    );
    for (let round = 1; round <= ROUNDS; round++) {
      log(`round ${round} of ${ROUNDS}`);
      await measureRound(started, samples, have, loadCpus);
    }
    for (const t of started) (samples.get(t) as Samples).rss = rssBytes(t.pid);
    const out = rows(started, samples, setup);
    for (const note of have.notes) out.push({ name: 'skipped', value: 0, unit: '', note });
    return out;
  } finally {
    for (const t of started.reverse()) await t.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const row of await benchDataplane()) {
    const ratio = row.ratio === undefined ? '' : `${row.ratio.toFixed(2)}x`;
    process.stdout.write(`| ${row.name} | ${row.value} | ${row.unit} | ${ratio} | ${row.note ?? ''} |\n`);
  }
}
