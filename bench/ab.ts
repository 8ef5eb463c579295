/**
 * Before/after on a shared machine: HAProxy and builds of this proxy side by side, each
 * `--concurrency 1` behind the same nginx upstream, the load run at every peer once per round
 * with the order rotated every round. The figure is CPU time per request, which load moves
 * far less than requests/s: the on-CPU nanoseconds of every thread of the peer's process
 * (`/proc/<pid>/task/<tid>/schedstat`, V8's helper threads included) over the run, divided by
 * the requests the load generator completed. The summary gives each build's median, its
 * geometric mean ratio to HAProxy in the same rounds, and each later build against the first
 * (geometric mean of the per-round ratios, and in how many rounds it was lower).
 *
 * Usage (after `npm run build`, in each build compared):
 *   node dist/bench/ab.js [--load h1|post|rate|tail|h2|h2post] [--upstream h1|h2] [--rounds N] [--seconds S] ROOT[,NODE_FLAG...] ...
 * where each ROOT is a checkout with its own `dist/` (e.g. a worktree of the commit before),
 * optionally with node flags for that peer (`.,--max-semi-space-size=4`). Loads: `wrk -c50`
 * GETs (h1), POSTs of 100 bytes (post), 2,000 GETs a second over 20 connections (rate),
 * the same staggered as the data-plane part's latency run, with its p99 and p99.9 (tail),
 * `h2load -c10 -m10` h2c GETs (h2) or POSTs of 100 bytes (h2post). `--upstream h2` makes nginx
 * an h2c upstream and the proxies' cluster (and HAProxy's server) speak HTTP/2 to it: the
 * upstream HTTP/2 client is then in the measured path.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { h2loadLatency, median } from './lib/load.js';
import { startHaproxy, startUpstream, type Target } from './peers/start.js';

const LOADS = ['h1', 'post', 'rate', 'tail', 'h2', 'h2post'] as const;
type Load = (typeof LOADS)[number];

interface Round {
  us: number;
  /** User and system time per request, µs, from `/proc/<pid>/stat` (10 ms ticks). */
  user: number;
  sys: number;
  perSecond: number;
  failed: number;
  /** `tail` only: p99 and p99.9 in ms. */
  p99?: number;
  p999?: number;
}

/** On-CPU nanoseconds of every thread of `pid` so far. */
function cpuNanoseconds(pid: number): number {
  let sum = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      sum += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return sum;
}

/** Clock ticks of user and system time of `pid` so far (`/proc/<pid>/stat` fields 14 and 15). */
function userSysTicks(pid: number): [number, number] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return [Number(fields[11]), Number(fields[12])];
}

function run(command: string, args: string[], seconds: number): Promise<string> {
  return new Promise((done, fail) => {
    execFile(command, args, { timeout: (seconds + 20) * 1000 }, (err, out) =>
      err ? fail(new Error(`${command} ${args.join(' ')}: ${err.message}`)) : done(out),
    );
  });
}

/** Runs `load` at `target` for `seconds`: the requests completed and those that failed. */
async function drive(
  load: Load,
  target: Target,
  seconds: number,
  files: string,
): Promise<Omit<Round, 'us' | 'user' | 'sys'>> {
  const h2 = load === 'h2' || load === 'h2post';
  const url = h2 ? (target.h2Url as string) : target.url;
  let out: string;
  if (load === 'tail') {
    const r = await h2loadLatency(url, 2000, 20, seconds);
    return { perSecond: r.requests / (seconds + 1), failed: r.errors, p99: r.p99, p999: r.p999 };
  }
  if (load === 'h1' || load === 'post') {
    const script = load === 'post' ? ['-s', join(files, 'post.lua')] : [];
    out = await run('wrk', ['-t1', '-c50', `-d${seconds}s`, ...script, url], seconds);
    const n = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
    const failed = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
    return { perSecond: n / seconds, failed };
  }
  const args =
    load === 'rate'
      ? ['--h1', '-c20', '--rps=100']
      : ['-c10', '-m10', ...(load === 'h2post' ? ['-d', join(files, 'body')] : [])];
  out = await run('h2load', [...args, `-D${seconds}`, url], seconds);
  const n = Number(/requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded/.exec(out)?.[1] ?? 0);
  const codes = /status codes: \d+ 2xx, \d+ 3xx, (\d+) 4xx, (\d+) 5xx/.exec(out);
  return { perSecond: n / seconds, failed: Number(codes?.[1] ?? 0) + Number(codes?.[2] ?? 0) };
}

const geometricMean = (xs: number[]) => Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length);

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const option = (name: string, fallback: string): string => {
    const at = argv.indexOf(name);
    if (at < 0) return fallback;
    const [, value] = argv.splice(at, 2);
    return value ?? fallback;
  };
  const load = option('--load', 'h1') as Load;
  const upstreamProtocol = option('--upstream', 'h1');
  const rounds = Number(option('--rounds', '8'));
  const seconds = Number(option('--seconds', '3'));
  const h2Upstream = upstreamProtocol === 'h2';
  const valid = LOADS.includes(load) && (h2Upstream || upstreamProtocol === 'h1');
  if (!valid || argv.length === 0 || !(rounds > 0) || !(seconds > 0)) {
    process.stderr.write(
      `usage: node dist/bench/ab.js [--load ${LOADS.join('|')}] [--upstream h1|h2] [--rounds N] [--seconds S] ROOT[,NODE_FLAG...] ...\n`,
    );
    process.exit(1);
  }
  const files = mkdtempSync(join(tmpdir(), 'bench-ab-'));
  writeFileSync(join(files, 'body'), 'x'.repeat(100));
  writeFileSync(
    join(files, 'post.lua'),
    'wrk.method = "POST"\nwrk.body = string.rep("x", 100)\nwrk.headers["Content-Type"] = "text/plain"\n',
  );
  const started: Target[] = [];
  const peers: Array<{ name: string; target: Target }> = [];
  try {
    const upstream = await startUpstream(undefined, h2Upstream);
    started.push(upstream.target);
    const haproxy = await startHaproxy(upstream.port, undefined, 1, h2Upstream);
    started.push(haproxy);
    peers.push({ name: 'HAProxy', target: haproxy });
    for (const [i, spec] of argv.entries()) {
      const [root, ...flags] = spec.split(',');
      const start = pathToFileURL(join(resolve(root as string), 'dist/bench/peers/start.js')).href;
      // Each build starts its own proxy, from its own `bin/` and `dist/`.
      const { startThisProxy } = (await import(`${start}?${i}`)) as typeof import('./peers/start.js');
      const target = await startThisProxy(upstream.port, 1, undefined, flags, { http2Upstream: h2Upstream });
      started.push(target);
      peers.push({ name: `${i}: ${spec}`, target });
    }
    for (const p of peers) await drive(load, p.target, 1, files);
    const results: Round[][] = peers.map(() => []);
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < peers.length; k++) {
        const i = (k + r) % peers.length;
        const peer = peers[i] as (typeof peers)[number];
        const before = cpuNanoseconds(peer.target.pid);
        const [user, sys] = userSysTicks(peer.target.pid);
        const out = await drive(load, peer.target, seconds, files);
        // A `tail` run has a warm-up second before its measured seconds, in the CPU time too.
        const requests = out.perSecond * (load === 'tail' ? seconds + 1 : seconds);
        const [userAfter, sysAfter] = userSysTicks(peer.target.pid);
        // Ticks are 10 ms (USER_HZ 100): 1e4 µs each.
        (results[i] as Round[]).push({
          ...out,
          us: (cpuNanoseconds(peer.target.pid) - before) / 1000 / requests,
          user: ((userAfter - user) * 1e4) / requests,
          sys: ((sysAfter - sys) * 1e4) / requests,
        });
      }
      const loadAverage = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
      const cells = peers.map((p, i) => {
        const x = (results[i] as Round[])[r] as Round;
        const tail = x.p99 === undefined ? '' : ` p99 ${x.p99.toFixed(2)} p99.9 ${x.p999?.toFixed(2)} ms`;
        return `${p.name} ${x.us.toFixed(1)} µs (user ${x.user.toFixed(1)} sys ${x.sys.toFixed(1)}) ${x.perSecond.toFixed(0)}/s${tail}${x.failed ? ` (${x.failed} failed)` : ''}`;
      });
      process.stdout.write(`round ${r + 1}, load average ${loadAverage}: ${cells.join(' | ')}\n`);
    }
    const us = (i: number) => (results[i] as Round[]).map((x) => x.us);
    for (const [i, p] of peers.entries()) {
      const toHaproxy = geometricMean(us(i).map((x, r) => x / (us(0)[r] as number)));
      const user = median((results[i] as Round[]).map((x) => x.user));
      const sys = median((results[i] as Round[]).map((x) => x.sys));
      process.stdout.write(
        `${p.name}: median ${median(us(i)).toFixed(1)} µs (${Math.min(...us(i)).toFixed(1)}-${Math.max(...us(i)).toFixed(1)}; user ${user.toFixed(1)}, sys ${sys.toFixed(1)}), ${toHaproxy.toFixed(2)}x HAProxy\n`,
      );
    }
    if (load === 'tail') {
      for (const [i, p] of peers.entries()) {
        const rs = results[i] as Round[];
        const ratio = (k: 'p99' | 'p999') =>
          geometricMean(rs.map((x, r) => (x[k] as number) / ((results[0] as Round[])[r]?.[k] as number)));
        process.stdout.write(
          `${p.name}: p99 median ${median(rs.map((x) => x.p99 as number)).toFixed(2)} ms (${ratio('p99').toFixed(2)}x HAProxy), p99.9 median ${median(rs.map((x) => x.p999 as number)).toFixed(2)} ms (${ratio('p999').toFixed(2)}x)\n`,
        );
      }
    }
    for (let i = 2; i < peers.length; i++) {
      const ratios = us(i).map((x, r) => x / (us(1)[r] as number));
      process.stdout.write(
        `${peers[i]?.name} / ${peers[1]?.name}: geometric mean ${geometricMean(ratios).toFixed(3)}, lower in ${ratios.filter((x) => x < 1).length} of ${rounds} rounds\n`,
      );
    }
  } finally {
    for (const t of started.reverse()) await t.stop();
    rmSync(files, { recursive: true, force: true });
  }
}

await main();
