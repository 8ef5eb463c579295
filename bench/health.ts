/**
 * Active health checking of 1,000 hosts at a 1 s interval: the CPU the health edge spends,
 * as a share of one core, over a measured window after every host had its first check. The
 * hosts are 1,000 loopback addresses (127.0.x.y) on one port of an upstream that runs in a
 * child process, so its own CPU is not counted. HTTP checks keep their connection between
 * checks (the default), TCP connect-only checks open one per check.
 * Run alone: `node --import tsx bench/health.ts` (or `npm run bench -- health`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { bootstrapLoaded, type JsonObject } from '../events/index.js';
import { Store } from '../src/control/store.js';
import { StatsStore } from '../src/stats/store.js';
import { startHealthEdges } from '../src/edges/health/index.js';
import type { BenchRow } from './types.js';

const HOSTS = 1_000;
const MEASURE_MS = 10_000;
const TARGET_PERCENT = 5;

/** An HTTP server on 0.0.0.0:<port> in a child process; resolves with the port. */
async function upstream(): Promise<{ port: number; child: ChildProcess }> {
  const code = `
    const http = require('node:http');
    const server = http.createServer((req, res) => res.end('ok'));
    server.keepAliveTimeout = 60000;
    server.listen(0, '0.0.0.0', () => process.stdout.write(server.address().port + '\\n'));`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout?.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
    child.once('exit', (c) => reject(new Error(`upstream exited with ${c}`)));
  });
  return { port, child };
}

function cluster(port: number, checker: JsonObject): JsonObject {
  return {
    name: 'many',
    connect_timeout: '1s',
    load_assignment: {
      cluster_name: 'many',
      endpoints: [
        {
          lb_endpoints: Array.from({ length: HOSTS }, (_, i) => ({
            endpoint: {
              address: {
                socket_address: {
                  address: `127.0.${Math.floor(i / 250) + 1}.${(i % 250) + 1}`,
                  port_value: port,
                },
              },
            },
          })),
        },
      ],
    },
    health_checks: [
      {
        timeout: '1s',
        interval: '1s',
        // The edge's own CPU is what is measured: no traffic flows, so run at `interval`.
        no_traffic_interval: '1s',
        interval_jitter_percent: 10,
        unhealthy_threshold: 2,
        healthy_threshold: 1,
        ...checker,
      },
    ],
  };
}

async function measure(port: number, what: string, checker: JsonObject): Promise<BenchRow> {
  const store = new Store();
  const stats = new StatsStore();
  store.dispatch(
    bootstrapLoaded({
      bootstrap: { static_resources: { clusters: [cluster(port, checker)] } },
      options: {},
      version: 'bench',
      sources: [],
    }),
    'bench',
  );
  const edges = startHealthEdges({ store, stats });
  await edges.firstRound;
  // Let the connections settle and the checks spread over the interval.
  await new Promise((r) => setTimeout(r, 2000));
  const attempts = () => stats.counters.get('cluster.many.health_check.attempt')?.value ?? 0;
  const before = process.cpuUsage();
  const attemptsBefore = attempts();
  const started = performance.now();
  await new Promise((r) => setTimeout(r, MEASURE_MS));
  const cpu = process.cpuUsage(before);
  const wall = performance.now() - started;
  const checks = attempts() - attemptsBefore;
  const healthy = stats.gauges.get('cluster.many.health_check.healthy')?.value ?? 0;
  edges.close();
  store.close();
  const percent = ((cpu.user + cpu.system) / 1000 / wall) * 100;
  return {
    name: `${HOSTS} hosts, ${what}, 1 s interval`,
    value: percent,
    unit: '% of one core',
    note: `${((checks * 1000) / wall).toFixed(0)} checks/s, ${healthy} healthy; target < ${TARGET_PERCENT} %`,
  };
}

export async function benchHealth(): Promise<BenchRow[]> {
  const { port, child } = await upstream();
  try {
    return [
      await measure(port, 'HTTP checks (kept connections)', { http_health_check: { path: '/healthz' } }),
      await measure(port, 'TCP connect checks', { tcp_health_check: {} }),
    ];
  } finally {
    child.kill();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const row of await benchHealth())
    console.log(`${row.name}: ${row.value.toFixed(2)} ${row.unit} ${row.note ?? ''}`);
}
