/**
 * Memory per static cluster and per host in a real serving process: the heap after a full
 * GC with 10,000 STATIC clusters (one endpoint each) minus the heap with none, and a cluster of
 * 10,001 endpoints minus one of 1, divided by 10,000. Everything a cluster costs is in it:
 * config, settings, runtime and balancer, upstream stats. Each bootstrap is served by its own
 * child process (`memory-child.ts`). Run alone: `npm run bench -- memory`.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchRow } from './types.js';

const COUNT = 10_000;
const compiled = import.meta.url.includes('/dist/');

interface Usage {
  heapUsed: number;
  rss: number;
}

function endpoint(i: number) {
  const ip = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
  return { endpoint: { address: { socket_address: { address: ip, port_value: 8080 } } } };
}

function staticCluster(name: string, hosts: number) {
  return {
    name,
    type: 'STATIC',
    connect_timeout: '0.25s',
    load_assignment: {
      cluster_name: name,
      endpoints: [{ lb_endpoints: Array.from({ length: hosts }, (_, i) => endpoint(i)) }],
    },
  };
}

function bootstrap(clusters: object[]) {
  return {
    admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
    static_resources: { clusters },
  };
}

/** Heap and RSS of a fresh process serving `config`. */
function measure(dir: string, name: string, config: object): Promise<Usage> {
  const path = join(dir, `${name}.json`);
  writeFileSync(path, JSON.stringify(config));
  const child = fileURLToPath(new URL(`./memory-child.${compiled ? 'js' : 'ts'}`, import.meta.url));
  const args = [...(compiled ? [] : ['--import', 'tsx']), '--expose-gc', child, path];
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { timeout: 120_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`serving ${name} failed: ${err.message} ${stderr}`));
      else resolve(JSON.parse(stdout.trim().split('\n').at(-1) as string) as Usage);
    });
  });
}

/** The memory part of `npm run bench`. */
export async function benchMemory(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-memory-'));
  try {
    const none = await measure(dir, 'none', bootstrap([]));
    const clusters = await measure(
      dir,
      'clusters',
      bootstrap(Array.from({ length: COUNT }, (_, i) => staticCluster(`cluster_${i}`, 1))),
    );
    const oneHost = await measure(dir, 'one-host', bootstrap([staticCluster('big', 1)]));
    const manyHosts = await measure(dir, 'many-hosts', bootstrap([staticCluster('big', COUNT + 1)]));
    const per = (a: Usage, b: Usage, key: keyof Usage) => Math.round((b[key] - a[key]) / COUNT);
    return [
      {
        name: `heap per STATIC cluster (${COUNT.toLocaleString('en-US')} clusters, 1 host each)`,
        value: per(none, clusters, 'heapUsed'),
        unit: 'bytes',
        note: `target <= 15 KB; RSS grows ${per(none, clusters, 'rss').toLocaleString('en-US')} B per cluster`,
      },
      {
        name: `heap per host (one STATIC cluster of ${COUNT.toLocaleString('en-US')} hosts)`,
        value: per(oneHost, manyHosts, 'heapUsed'),
        unit: 'bytes',
        note: `target <= 700 B; RSS grows ${per(oneHost, manyHosts, 'rss').toLocaleString('en-US')} B per host`,
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
