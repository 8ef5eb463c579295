/**
 * Load generators of the data-plane benchmark, run as child processes and parsed:
 * wrk (closed loop, fixed connections) for HTTP/1.1 requests/s, h2load for the fixed-rate
 * latency run (`--h1 --rps`, connections opened 1 ms apart, per-request times from `--log-file`) and for HTTP/2 requests/s.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** What one load run measured. */
export interface LoadResult {
  requests: number;
  perSecond: number;
  /** Non-2xx responses, socket errors, failed requests: anything but a clean run. */
  errors: number;
}

/** Latency percentiles of a fixed-rate run, in milliseconds. */
export interface LatencyResult extends LoadResult {
  p50: number;
  p99: number;
  /** The 99.9th percentile: where single pauses of a few ms (a full GC) show when the p99 hides them. */
  p999: number;
}

function run(command: string, args: string[], cpus: string | undefined, timeoutMs: number): Promise<string> {
  const [file, argv] = cpus ? ['taskset', ['-c', cpus, command, ...args]] : [command, args];
  return new Promise((resolve, reject) => {
    execFile(file, argv, { timeout: timeoutMs, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${command} ${args.join(' ')} failed: ${err.message} ${stderr}`));
      else resolve(stdout);
    });
  });
}

function numberAfter(text: string, pattern: RegExp, what: string): number {
  const match = pattern.exec(text);
  if (!match) throw new Error(`no ${what} in load generator output:\n${text}`);
  return Number(match[1]);
}

/** `wrk -t1 -cN -dS url`: requests/s with N keep-alive connections. */
export async function wrk(
  url: string,
  connections: number,
  seconds: number,
  cpus?: string,
): Promise<LoadResult> {
  const out = await run(
    'wrk',
    ['-t1', `-c${connections}`, `-d${seconds}s`, url],
    cpus,
    (seconds + 10) * 1000,
  );
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const socketErrors = socket ? socket.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0;
  return {
    requests: numberAfter(out, /(\d+) requests in/, 'request count'),
    perSecond: numberAfter(out, /Requests\/sec:\s+([\d.]+)/, 'Requests/sec'),
    errors: Number(non2xx?.[1] ?? 0) + socketErrors,
  };
}

function h2loadSummary(out: string): LoadResult {
  const failed = numberAfter(out, /(\d+) failed/, 'failed count');
  const errored = numberAfter(out, /(\d+) errored/, 'errored count');
  const non2xx = /status codes: \d+ 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(out);
  return {
    requests: numberAfter(out, /requests: \d+ total, \d+ started, (\d+) done/, 'done count'),
    perSecond: numberAfter(out, /finished in [\d.]+m?s, ([\d.]+) req\/s/, 'req/s'),
    errors: failed + errored + (non2xx ? non2xx.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0),
  };
}

/** The value at quantile `q` (0..1) of an ascending array. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

/** The median of the values (upper median for an even count). */
export function median(values: readonly number[]): number {
  return quantile(
    [...values].sort((a, b) => a - b),
    0.5,
  );
}

/** h2load's per-request log: start (µs since the epoch), status, µs until the end of the response. */
function requestLog(path: string): Array<{ start: number; ms: number }> {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [start, , us] = line.split('\t');
      return { start: Number(start), ms: Number(us) / 1000 };
    });
}

/**
 * HTTP/1.1 at a fixed total rate: `clients` connections each sending `rate / clients` req/s,
 * for a warm-up second and then `seconds`; p50/p99/p99.9 from h2load's per-request log, the
 * warm-up's requests left out. The connections are opened 1 ms apart (`-r1 --rate-period=1ms`)
 * and each keeps the phase it started with, so requests arrive spread over each period. With
 * `--rps` alone every connection starts at once and stays in step: the 20 requests of a period
 * arrived together, and a peer's p99 was the time to drain the last of 20 (bench/README.md,
 * "The tail at 2,000 req/s was bursts of 20").
 */
export async function h2loadLatency(
  url: string,
  rate: number,
  clients: number,
  seconds: number,
  cpus?: string,
): Promise<LatencyResult> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-h2load-'));
  const warmUpSeconds = 1;
  try {
    const log = join(dir, 'requests.tsv');
    const out = await run(
      'h2load',
      [
        '--h1',
        `-c${clients}`,
        '-r1',
        '--rate-period=1ms',
        `-n${rate * (seconds + warmUpSeconds)}`,
        `--rps=${rate / clients}`,
        `--log-file=${log}`,
        url,
      ],
      cpus,
      (seconds + warmUpSeconds + 15) * 1000,
    );
    const requests = requestLog(log);
    const measuredFrom = Math.min(...requests.map((r) => r.start)) + warmUpSeconds * 1e6;
    const times = requests
      .filter((r) => r.start >= measuredFrom)
      .map((r) => r.ms)
      .sort((a, b) => a - b);
    return {
      ...h2loadSummary(out),
      p50: quantile(times, 0.5),
      p99: quantile(times, 0.99),
      p999: quantile(times, 0.999),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** HTTP/2 with prior knowledge (h2c): `clients` connections, `streams` concurrent streams each. */
export async function h2loadThroughput(
  url: string,
  clients: number,
  streams: number,
  seconds: number,
  cpus?: string,
): Promise<LoadResult> {
  const out = await run(
    'h2load',
    [`-c${clients}`, `-m${streams}`, `-D${seconds}`, '--warm-up-time=1', url],
    cpus,
    (seconds + 15) * 1000,
  );
  return h2loadSummary(out);
}
