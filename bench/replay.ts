/**
 * Replay throughput: a generated log of 1,000,000 events over 1,000 clusters (health flaps,
 * weight changes, runtime modifies) folded by `replayLog`, with immer's auto-freeze on (as
 * in tests) and off, plus the peak memory while replaying. Target: >= 300,000 events/s.
 * `BENCH_REPLAY_EVENTS=N` shrinks the log for a quick run.
 */
import { createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setAutoFreeze } from 'immer';
import {
  activeHealthChanged,
  bootstrapLoaded,
  type Envelope,
  hostsUpdated,
  type JsonObject,
  type ProxyEvent,
  runtimeModified,
} from '../events/index.js';
import { envelopeLine, headerLine, LOG_FORMAT, LOG_VERSION } from '../src/control/log-format.js';
import { replayLog } from '../src/control/replay.js';
import type { BenchRow } from './types.js';

const CLUSTERS = 1000;
const HOSTS = 10;

function bootstrap(): JsonObject {
  const clusters = Array.from({ length: CLUSTERS }, (_, c) => ({
    name: `c${c}`,
    // One cluster in ten merges updates, so the merge window's timers are part of the cost.
    common_lb_config: { update_merge_window: c % 10 === 0 ? '1s' : '0s' },
    load_assignment: {
      cluster_name: `c${c}`,
      endpoints: [
        {
          lb_endpoints: Array.from({ length: HOSTS }, (_, h) => ({
            endpoint: {
              address: { socket_address: { address: `10.${c >> 8}.${c & 255}.${h}`, port_value: 80 } },
            },
          })),
        },
      ],
    },
  }));
  return { static_resources: { clusters } };
}

/** Deterministic pseudo-random numbers, so every run replays the same log. */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

async function writeLog(path: string, events: number): Promise<void> {
  const out = createWriteStream(path);
  const write = (text: string) =>
    out.write(text) ? Promise.resolve() : new Promise<void>((r) => out.once('drain', () => r()));
  await write(
    headerLine({
      format: LOG_FORMAT,
      version: LOG_VERSION,
      product: 'bench',
      options: {},
      bootstrap: null,
      opened_at: new Date(0).toISOString(),
    }),
  );
  const random = lcg(42);
  let at = 1_000_000;
  const env = (seq: number, event: ProxyEvent): Envelope<ProxyEvent> => ({ seq, at, source: 'bench', event });
  await write(
    envelopeLine(
      env(1, bootstrapLoaded({ bootstrap: bootstrap(), options: {}, version: 'bench', sources: [] })),
    ),
  );
  let chunk = '';
  for (let seq = 2; seq <= events; seq++) {
    at += Math.floor(random() * 3);
    const c = Math.floor(random() * CLUSTERS);
    const address = `10.${c >> 8}.${c & 255}.${Math.floor(random() * HOSTS)}:80`;
    const kind = random();
    const event: ProxyEvent =
      kind < 0.5
        ? activeHealthChanged({ cluster: `c${c}`, address, healthy: random() < 0.5 })
        : kind < 0.75
          ? hostsUpdated({ cluster: `c${c}`, updates: [{ address, weight: 1 + Math.floor(random() * 100) }] })
          : runtimeModified({ values: { [`key.${Math.floor(random() * 100)}`]: String(seq) } });
    chunk += envelopeLine(env(seq, event));
    if (chunk.length > 1 << 20) {
      await write(chunk);
      chunk = '';
    }
  }
  await write(chunk);
  await new Promise<void>((resolve) => out.end(resolve));
}

async function timedReplay(
  path: string,
): Promise<{ seconds: number; cpuSeconds: number; events: number; peakRss: number }> {
  let peakRss = process.memoryUsage().rss;
  const started = process.hrtime.bigint();
  const cpuBefore = process.cpuUsage();
  const result = await replayLog(path, {
    onProgress: () => {
      peakRss = Math.max(peakRss, process.memoryUsage().rss);
    },
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const cpu = process.cpuUsage(cpuBefore);
  return { seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6, events: result.events, peakRss };
}

/** The replay rows of `npm run bench`. */
export async function benchReplay(): Promise<BenchRow[]> {
  const events = Number(process.env.BENCH_REPLAY_EVENTS ?? 1_000_000);
  const dir = mkdtempSync(join(tmpdir(), 'bench-replay-'));
  try {
    const path = join(dir, 'events.ndjson');
    await writeLog(path, events);
    const size = statSync(path).size;
    setAutoFreeze(true);
    const frozen = await timedReplay(path);
    setAutoFreeze(false);
    const thawed = await timedReplay(path);
    setAutoFreeze(true);
    // Events per second of the process's CPU time too: on a shared machine wall time also counts other work.
    const note = (run: { events: number; cpuSeconds: number }) =>
      `${events.toLocaleString('en-US')} events, ${CLUSTERS} clusters x ${HOSTS} hosts; ${Math.round(run.events / run.cpuSeconds).toLocaleString('en-US')}/s of CPU time; target >= 300,000/s`;
    return [
      {
        name: 'replay, auto-freeze on',
        value: Math.round(frozen.events / frozen.seconds),
        unit: 'events/s',
        note: note(frozen),
      },
      {
        name: 'replay, auto-freeze off',
        value: Math.round(thawed.events / thawed.seconds),
        unit: 'events/s',
        note: note(thawed),
      },
      {
        name: 'peak RSS while replaying (freeze on)',
        value: Math.round(frozen.peakRss / 2 ** 20),
        unit: 'MiB',
      },
      { name: 'log size', value: Math.round(size / 2 ** 20), unit: 'MiB' },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1]?.endsWith('/bench/replay.js') || process.argv[1]?.endsWith('/bench/replay.ts')) {
  for (const row of await benchReplay()) {
    process.stdout.write(`${row.name}: ${row.value} ${row.unit}${row.note ? ` (${row.note})` : ''}\n`);
  }
}
