/**
 * Where the microseconds go: runs this proxy (`--concurrency 1`) under `node --cpu-prof`
 * while wrk drives it through the nginx upstream, then prints the self time of the hottest
 * functions and the share per source area (parser, socket writes, stats, routing, GC...).
 * h2load (h2c, 10 connections x 10 streams) drives it instead with `h2`.
 * Usage (after `npm run build`): `node dist/bench/profile.js [seconds] [h1|h2]`; the raw
 * `.cpuprofile` is kept (its path is printed) for Chrome DevTools.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { h2loadThroughput, wrk } from './lib/load.js';
import { startThisProxy, startUpstream, type Target } from './peers/start.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** A source area for a frame: this proxy's folders by path, Node internals by module, V8 buckets as they are. */
function area(frame: ProfileNode['callFrame']): string {
  const { url, functionName } = frame;
  if (!url) return `(${functionName || 'anonymous'})`;
  const ours =
    /\/(src|events|reducers|views)\/(.*)\/[^/]+\.js$/.exec(url) ?? /\/(src)\/([^/]+)\.js$/.exec(url);
  if (ours) return `${ours[1]}/${ours[2]}`;
  const dep = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (dep) return `dependency ${dep[1]}`;
  if (url.startsWith('node:')) return url;
  return url.replace(/^file:\/\/.*\/(dist\/)?/, '');
}

/** Self time in ms per key, from the sample counts and time deltas. */
function selfTimes(profile: CpuProfile, key: (node: ProfileNode) => string): Map<string, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const out = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const node = byId.get(id);
    if (!node) return;
    const k = key(node);
    out.set(k, (out.get(k) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
  return out;
}

function top(times: Map<string, number>, count: number): string {
  const total = [...times.values()].reduce((a, b) => a + b, 0);
  return [...times]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(
      ([k, ms]) => `${((ms / total) * 100).toFixed(1).padStart(5)}%  ${ms.toFixed(0).padStart(6)} ms  ${k}`,
    )
    .join('\n');
}

async function main(): Promise<void> {
  const seconds = Number(process.argv[2] ?? 10);
  const dir = mkdtempSync(join(tmpdir(), 'bench-profile-'));
  const started: Target[] = [];
  try {
    const upstream = await startUpstream('0');
    started.push(upstream.target);
    const proxy = await startThisProxy(upstream.port, 1, '1', ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
    started.push(proxy);
    const h2 = process.argv[3] === 'h2';
    // h2load warms up on its own; wrk gets a 1 s run first.
    if (!h2) await wrk(proxy.url, 50, 1, '0');
    const result = h2
      ? await h2loadThroughput(proxy.h2Url as string, 10, 10, seconds, '0')
      : await wrk(proxy.url, 50, seconds, '0');
    process.stdout.write(
      `${result.perSecond.toFixed(0)} req/s under the profiler (${result.errors} errors)\n`,
    );
    // The profile is written at a clean exit, which /quitquitquit gives.
    await fetch(`${proxy.admin}/quitquitquit`, { method: 'POST' });
    const deadline = Date.now() + 30_000;
    while (existsSync(`/proc/${proxy.pid}`) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
  } finally {
    for (const t of started.reverse()) await t.stop();
  }
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no .cpuprofile written in ${dir}: did the proxy exit cleanly?`);
  const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
  process.stdout.write(`profile: ${join(dir, file)}\n\nself time by area:\n`);
  process.stdout.write(
    `${top(
      selfTimes(profile, (n) => area(n.callFrame)),
      25,
    )}\n\nhottest functions:\n`,
  );
  const fn = (n: ProfileNode) =>
    `${n.callFrame.functionName || '(anonymous)'} ${area(n.callFrame)}:${n.callFrame.lineNumber + 1}`;
  process.stdout.write(`${top(selfTimes(profile, fn), 40)}\n`);
}

await main();
