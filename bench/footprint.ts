/**
 * Footprint: the RSS of the whole process tree (the primary and every worker) of this proxy at
 * `--concurrency 1, 2, 4`, beside HAProxy at `nbthread 1, 2, 4`, each measured after the same
 * data-plane runs as the `dataplane` part (HTTP/1.1 keep-alive with wrk, then h2c with h2load)
 * through it to one nginx upstream, so the figure is what a sidecar holds once it has served.
 * Each pair runs alone (started, driven, measured, stopped) so no figure shares the machine
 * with another peer's memory. The RSS is read at once and again `SETTLE_MS` later, idle: what
 * a sidecar holds between bursts. Run alone: `npm run bench -- footprint`.
 */
import { pathToFileURL } from 'node:url';
import { h2loadThroughput, wrk } from './lib/load.js';
import { findExecutable, type RssParts, rssBytes, rssParts } from './lib/processes.js';
import { startHaproxy, startThisProxy, startUpstream, type Target } from './peers/start.js';
import type { BenchRow } from './types.js';

const WIDTHS = [1, 2, 4];
const WRK_CONNECTIONS = 50;
const WRK_SECONDS = 4;
const H2_CLIENTS = 10;
const H2_STREAMS = 10;
const H2_SECONDS = 3;
/** The second reading, idle after the runs: this proxy's threads collect once a burst ends (src/memory.ts). */
const SETTLE_MS = 5000;

interface Measured {
  rss: number;
  /** What `rss` is made of (read just after it). */
  parts: RssParts;
  /** RSS `SETTLE_MS` after the runs. */
  settled: number;
  settledParts: RssParts;
  rps: number;
  h2rps: number;
}

const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

/** Where a reading's memory is: the binary's and libraries' pages, V8's heap pages, the rest. */
function partsText(parts: RssParts): string {
  return `files ${mb(parts.file)}, V8 heap pages ${mb(parts.v8)}, malloc and the rest ${mb(parts.rest)}`;
}

function log(line: string): void {
  process.stderr.write(`  footprint: ${line}\n`);
}

/** Drives `target` as the data-plane part does, then reads its tree's RSS. */
async function drive(target: Target): Promise<Measured> {
  const h1 = await wrk(target.url, WRK_CONNECTIONS, WRK_SECONDS);
  const h2 = target.h2Url ? await h2loadThroughput(target.h2Url, H2_CLIENTS, H2_STREAMS, H2_SECONDS) : null;
  const rss = rssBytes(target.pid);
  const parts = rssParts(target.pid);
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  const settled = rssBytes(target.pid);
  const settledParts = rssParts(target.pid);
  log(
    `${target.name}: ${mb(rss)} MB (${partsText(parts)}), ${mb(settled)} MB idle (${partsText(settledParts)}), ` +
      `${h1.perSecond.toFixed(0)} req/s`,
  );
  return { rss, parts, settled, settledParts, rps: h1.perSecond, h2rps: h2?.perSecond ?? 0 };
}

async function measure(launch: () => Promise<Target>): Promise<Measured> {
  const target = await launch();
  try {
    return await drive(target);
  } finally {
    await target.stop();
  }
}

/**
 * What width `n` adds: to `--concurrency 1` (one thread) for 2 (the main thread and two
 * workers), per worker beyond 2 for wider ones.
 */
function growth(byWidth: Map<number, Measured>, n: number, key: 'rss' | 'settled'): string {
  const base = byWidth.get(n === 2 ? 1 : 2);
  if (n === 1 || !base) return '';
  const now = (byWidth.get(n) as Measured)[key];
  return n === 2
    ? `${mb(now - base[key])} MB more than --concurrency 1`
    : `${mb((now - base[key]) / (n - 2))} MB per worker beyond 2`;
}

/** The footprint part of `npm run bench`. */
export async function benchFootprint(): Promise<BenchRow[]> {
  const missing = ['nginx', 'haproxy', 'wrk', 'h2load'].filter((tool) => findExecutable(tool) === undefined);
  if (missing.length > 0)
    throw new Error(`missing ${missing.join(', ')} (scripts/install-system-deps.sh installs them)`);
  const upstream = await startUpstream();
  const out: BenchRow[] = [];
  try {
    const byWidth = new Map<number, Measured>();
    for (const n of WIDTHS) {
      const haproxy = await measure(() => startHaproxy(upstream.port, undefined, n));
      const proxy = await measure(() => startThisProxy(upstream.port, n));
      byWidth.set(n, proxy);
      const value = (bytes: number) => Number(mb(bytes));
      out.push(
        { name: `HAProxy nbthread ${n}: RSS after the runs`, value: value(haproxy.rss), unit: 'MB' },
        {
          name: `this proxy --concurrency ${n}: RSS after the runs (all processes)`,
          value: value(proxy.rss),
          unit: 'MB',
          ratio: proxy.rss / haproxy.rss,
          note: [growth(byWidth, n, 'rss'), partsText(proxy.parts)].filter(Boolean).join('; '),
        },
        {
          name: `HAProxy nbthread ${n}: RSS ${SETTLE_MS / 1000} s later, idle`,
          value: value(haproxy.settled),
          unit: 'MB',
        },
        {
          name: `this proxy --concurrency ${n}: RSS ${SETTLE_MS / 1000} s later, idle (all processes)`,
          value: value(proxy.settled),
          unit: 'MB',
          ratio: proxy.settled / haproxy.settled,
          note: [growth(byWidth, n, 'settled'), partsText(proxy.settledParts)].filter(Boolean).join('; '),
        },
        {
          name: `this proxy --concurrency ${n}: HTTP/1.1 requests/s`,
          value: Math.round(proxy.rps),
          unit: 'req/s',
          ratio: proxy.rps / haproxy.rps,
          note: `HAProxy nbthread ${n}: ${Math.round(haproxy.rps)}; h2c ${Math.round(proxy.h2rps)} vs ${Math.round(haproxy.h2rps)}`,
        },
      );
    }
  } finally {
    await upstream.target.stop();
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const row of await benchFootprint()) {
    const ratio = row.ratio === undefined ? '' : `${row.ratio.toFixed(2)}x`;
    process.stdout.write(`| ${row.name} | ${row.value} | ${row.unit} | ${ratio} | ${row.note ?? ''} |\n`);
  }
}
