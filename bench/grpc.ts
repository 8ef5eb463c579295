/**
 * gRPC on loopback: a real `@grpc/grpc-js` client to a real `@grpc/grpc-js` server
 * (`peers/grpc-peer.ts`), directly, through HAProxy (h2c both sides) and through this proxy
 * (h2c downstream, a cluster with `http2_protocol_options`), in interleaved rounds. Two loads:
 * unary calls (10 connections x 10 calls in flight) and a bidirectional stream per connection
 * (10 connections x 10 messages in flight, each echoed). Figures per peer: calls/s, p50/p99
 * (from the client's own clock), CPU time per call of the peer's process tree (from /proc).
 * Run alone: `npm run bench -- grpc`. Knobs: BENCH_ROUNDS (default 3), BENCH_PIN=0.
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import { pathToFileURL } from 'node:url';
import { median } from './lib/load.js';
import { cpuSeconds, findExecutable } from './lib/processes.js';
import { nodeScript, startGrpcServer, startHaproxy, startThisProxy, type Target } from './peers/start.js';
import type { BenchRow } from './types.js';

const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const CONNECTIONS = 10;
const IN_FLIGHT = 10;
const SECONDS = 3;
const WARM_UP_SECONDS = 1;
const BASELINE = 'HAProxy';
const KINDS = {
  unary: `unary calls (${CONNECTIONS} conns x ${IN_FLIGHT} in flight)`,
  chat: `bidi stream messages (${CONNECTIONS} streams x ${IN_FLIGHT} in flight)`,
} as const;
type Kind = keyof typeof KINDS;

/** What one client run printed. */
interface ClientResult {
  calls: number;
  seconds: number;
  p50: number;
  p99: number;
  errors: number;
}

interface Samples {
  perSecond: number[];
  p50: number[];
  p99: number[];
  cpuPerCallUs: number[];
  errors: number;
}

function log(line: string): void {
  process.stderr.write(`  grpc: ${line}\n`);
}

/** One run of the gRPC client (`grpc-peer.ts client`) against `address`. */
function client(address: string, kind: Kind, seconds: number, cpus?: string): Promise<ClientResult> {
  const [node, args] = nodeScript('grpc-peer', [
    'client',
    address,
    kind,
    String(CONNECTIONS),
    String(IN_FLIGHT),
    String(seconds),
  ]);
  const [file, argv] = cpus ? ['taskset', ['-c', cpus, node, ...args]] : [node, args];
  return new Promise((resolve, reject) => {
    const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), (seconds + 20) * 1000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (code !== 0 || !line) reject(new Error(`gRPC client against ${address} failed (${code}): ${out}`));
      else resolve(JSON.parse(line) as ClientResult);
    });
  });
}

/** The gRPC part of `npm run bench`. */
export async function benchGrpc(): Promise<BenchRow[]> {
  const haveTaskset = findExecutable('taskset') !== undefined;
  const pin = haveTaskset && os.cpus().length >= 2 && process.env.BENCH_PIN !== '0';
  // As in the data-plane part: proxies on CPU 1, the client and the server on CPU 0.
  const [loadCpus, proxyCpus] = pin ? ['0', '1'] : [undefined, undefined];
  const notes: string[] = [];
  const started: Target[] = [];
  try {
    const server = await startGrpcServer(loadCpus);
    started.push(server.target);
    if (findExecutable('haproxy')) started.push(await startHaproxy(server.port, proxyCpus, 1, true));
    else notes.push('HAProxy skipped, no ratios: install the Debian package haproxy');
    started.push({
      ...(await startThisProxy(server.port, 1, proxyCpus, [], { http2Upstream: true })),
      name: 'this proxy --concurrency 1',
    });
    const samples = new Map<string, Samples>();
    for (const kind of Object.keys(KINDS) as Kind[]) {
      for (const t of started)
        samples.set(`${kind} ${t.name}`, { perSecond: [], p50: [], p99: [], cpuPerCallUs: [], errors: 0 });
    }
    for (let round = 1; round <= ROUNDS; round++) {
      log(`round ${round} of ${ROUNDS}`);
      for (const kind of Object.keys(KINDS) as Kind[]) {
        for (const t of started) {
          const address = new URL(t.h2Url as string).host;
          await client(address, kind, WARM_UP_SECONDS, loadCpus);
          const before = cpuSeconds(t.pid);
          const r = await client(address, kind, SECONDS, loadCpus);
          const after = cpuSeconds(t.pid);
          const s = samples.get(`${kind} ${t.name}`) as Samples;
          s.perSecond.push(r.calls / r.seconds);
          s.p50.push(r.p50);
          s.p99.push(r.p99);
          s.cpuPerCallUs.push(
            ((after.user + after.sys - before.user - before.sys) / Math.max(1, r.calls)) * 1e6,
          );
          s.errors += r.errors;
          log(`${kind}, ${t.name}: ${(r.calls / r.seconds).toFixed(0)} calls/s, p99 ${r.p99.toFixed(2)} ms`);
        }
      }
    }
    const out: BenchRow[] = [];
    for (const kind of Object.keys(KINDS) as Kind[]) {
      const figure = (label: string, unit: string, pick: (s: Samples) => number[], note?: string) => {
        const base = samples.get(`${kind} ${BASELINE}`);
        const baseValue = base ? median(pick(base)) : Number.NaN;
        for (const t of started) {
          const s = samples.get(`${kind} ${t.name}`) as Samples;
          const value = median(pick(s));
          const notes = [
            t.name === 'direct (no proxy)' ? note : undefined,
            s.errors > 0 ? `${s.errors} failed calls in the runs` : undefined,
          ].filter(Boolean);
          out.push({
            name: `${label} ${KINDS[kind]}, ${t.name}`,
            value: Number(value.toPrecision(4)),
            unit,
            ratio: Number.isFinite(baseValue) && baseValue > 0 ? value / baseValue : undefined,
            note: notes.join('; ') || undefined,
          });
        }
      };
      figure('calls/s,', 'calls/s', (s) => s.perSecond, 'ceiling of the grpc-js client and server');
      figure('p50,', 'ms', (s) => s.p50);
      figure('p99,', 'ms', (s) => s.p99);
      figure('CPU per call,', 'µs', (s) => s.cpuPerCallUs, 'the grpc-js server alone');
    }
    for (const note of notes) out.push({ name: 'skipped', value: 0, unit: '', note });
    return out;
  } finally {
    for (const t of started.reverse()) await t.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const row of await benchGrpc()) {
    const ratio = row.ratio === undefined ? '' : `${row.ratio.toFixed(2)}x`;
    process.stdout.write(`| ${row.name} | ${row.value} | ${row.unit} | ${ratio} | ${row.note ?? ''} |\n`);
  }
}
