/**
 * Slow clients against this proxy and its peers, with Debian's `slowhttptest`: slowloris (`-H`,
 * a request head dripped one header at a time), slow body (`-B`, a POST body dripped) and slow
 * read (`-X`, responses read through a tiny receive window), each for a fixed time while
 * slowhttptest probes the service with a fresh request every second. Figures per peer and
 * attack: the attack's connections still open at the end (what the peer let it hold), and the
 * share of seconds the probe was answered (whether everyone else was still served).
 * Run alone: `npm run bench -- slow`. Knobs: BENCH_SLOW_CONNECTIONS (default 1000),
 * BENCH_SLOW_SECONDS (default 30 per attack and peer).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import { findExecutable } from './lib/processes.js';
import { startHaproxy, startNginxProxy, startThisProxy, startUpstream, type Target } from './peers/start.js';
import type { BenchRow } from './types.js';

const CONNECTIONS = Math.max(1, Number(process.env.BENCH_SLOW_CONNECTIONS ?? 1000));
const SECONDS = Math.max(2, Number(process.env.BENCH_SLOW_SECONDS ?? 30));
/** Connections opened per second, so the whole attack is open within a third of the run. */
const RATE = Math.max(1, Math.ceil((CONNECTIONS * 3) / SECONDS));
/** A probe unanswered for this long counts the service as unavailable. */
const PROBE_TIMEOUT_S = 3;

interface Attack {
  label: string;
  flags: string[];
}

const ATTACKS: Attack[] = [
  // Follow-up data every 5 s, below any sane header timeout: the head is never finished.
  { label: 'slowloris (-H)', flags: ['-H', '-i', '5'] },
  { label: 'slow body (-B)', flags: ['-B', '-i', '5', '-s', '8192'] },
  // 10 pipelined requests (slowhttptest's maximum) a connection, read 16 bytes a second
  // through a 1-16 byte window.
  { label: 'slow read (-X)', flags: ['-X', '-k', '10', '-n', '1', '-w', '1', '-y', '16', '-z', '16'] },
];

/** What one slowhttptest run saw, from its per-second CSV and its last words. */
export interface SlowRun {
  /** Attack connections open at the last second. */
  openAtEnd: number;
  maxOpen: number;
  closed: number;
  /** Seconds the probe was answered, over all seconds sampled. */
  availableShare: number;
  exitStatus: string;
}

/**
 * Reads slowhttptest's `-g` CSV (`Seconds,Closed,Pending,Connected,Service Available`, where
 * the last column is 0 when the probe failed) and its console report.
 */
export function readSlowRun(csv: string, report: string): SlowRun {
  const rows = csv
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => line.split(',').map(Number))
    .filter((fields) => fields.length === 5 && fields.every(Number.isFinite));
  if (rows.length === 0) throw new Error(`slowhttptest wrote no samples: ${report.slice(-500)}`);
  const last = rows[rows.length - 1] as number[];
  const exit = /Exit status:\s*(.+)/.exec(stripVTControlCharacters(report));
  return {
    openAtEnd: last[3] as number,
    maxOpen: Math.max(...rows.map((r) => r[3] as number)),
    closed: last[1] as number,
    availableShare: rows.filter((r) => (r[4] as number) > 0).length / rows.length,
    exitStatus: exit ? (exit[1] as string).trim() : 'no exit status',
  };
}

function log(line: string): void {
  process.stderr.write(`  slow: ${line}\n`);
}

function slowhttptest(binary: string, attack: Attack, url: string, dir: string): Promise<SlowRun> {
  const prefix = join(dir, `run-${Date.now()}`);
  const args = [
    ...attack.flags,
    '-c',
    String(CONNECTIONS),
    '-r',
    String(RATE),
    '-l',
    String(SECONDS),
    '-p',
    String(PROBE_TIMEOUT_S),
    '-g',
    '-o',
    prefix,
    '-u',
    url,
  ];
  return new Promise((resolve, reject) => {
    execFile(
      binary,
      args,
      { timeout: (SECONDS + 60) * 1000, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const report = `${stdout}${stderr}`;
        try {
          resolve(readSlowRun(readFileSync(`${prefix}.csv`, 'utf8'), report));
        } catch (readErr) {
          const said = stripVTControlCharacters(report).replaceAll('\0', '').trim().slice(-300);
          reject(
            new Error(`slowhttptest ${args.join(' ')}: ${(err ?? (readErr as Error)).message}; ${said}`),
          );
        }
      },
    );
  });
}

/** The slow-client part of `npm run bench`. */
export async function benchSlow(): Promise<BenchRow[]> {
  const binary = findExecutable('slowhttptest');
  if (!binary) {
    return [
      {
        name: 'skipped',
        value: 0,
        unit: '',
        note: 'slowhttptest is not installed: install the Debian package slowhttptest',
      },
    ];
  }
  if (!findExecutable('nginx')) {
    throw new Error('nginx is not installed (Debian package nginx); it is the upstream behind every peer');
  }
  const notes: string[] = [];
  const haproxy = findExecutable('haproxy') !== undefined;
  if (!haproxy) notes.push('HAProxy skipped: install the Debian package haproxy');
  const dir = mkdtempSync(join(tmpdir(), 'bench-slow-'));
  const started: Target[] = [];
  const out: BenchRow[] = [];
  try {
    const upstream = await startUpstream();
    started.push(upstream.target);
    const peers: Target[] = [];
    const start = async (name: string, launch: () => Promise<Target>) => {
      try {
        const target = await launch();
        started.push(target);
        peers.push(target);
      } catch (err) {
        notes.push(`${name} did not start: ${(err as Error).message.replace(/\s+/g, ' ').slice(0, 300)}`);
      }
    };
    if (haproxy) await start('HAProxy', () => startHaproxy(upstream.port));
    await start('nginx', () => startNginxProxy(upstream.port));
    await start('this proxy', () => startThisProxy(upstream.port, 1));
    for (const attack of ATTACKS) {
      for (const peer of peers) {
        log(`${attack.label} against ${peer.name}: ${CONNECTIONS} connections, ${SECONDS} s`);
        const run = await slowhttptest(binary, attack, peer.url, dir);
        log(`  ${JSON.stringify(run)}`);
        const setup = `${CONNECTIONS} connections at ${RATE}/s for ${SECONDS} s`;
        out.push({
          name: `${attack.label}, ${peer.name}: attack connections open at the end`,
          value: run.openAtEnd,
          unit: 'connections',
          note: `${setup}; at most ${run.maxOpen} open, ${run.closed} closed by the peer; slowhttptest: ${run.exitStatus}`,
        });
        out.push({
          name: `${attack.label}, ${peer.name}: seconds the probe was answered`,
          value: Math.round(run.availableShare * 100),
          unit: '%',
          note: `a fresh GET each second, unavailable after ${PROBE_TIMEOUT_S} s without a response`,
        });
      }
    }
  } finally {
    for (const t of started.reverse()) await t.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  for (const note of notes) out.push({ name: 'skipped', value: 0, unit: '', note });
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const row of await benchSlow()) {
    process.stdout.write(`| ${row.name} | ${row.value} | ${row.unit} | ${row.note ?? ''} |\n`);
  }
}
