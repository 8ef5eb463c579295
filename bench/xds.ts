/**
 * xDS over real gRPC on loopback, against the test management server: an EDS update of 10,000
 * endpoints from the moment the server has written it until the cluster's balancer holds the
 * new members; 10,000 clusters pushed by CDS until the cluster manager runs them all, and the
 * heap they cost per cluster. Run alone: `node --import tsx bench/xds.ts` (or
 * `npm run bench -- xds`).
 */
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import bunyan from 'bunyan';
import { bootstrapLoaded, type JsonObject } from '../events/index.js';
import { DEFAULT_OPTIONS } from '../src/cli/parse.js';
import { createContext, type ServerContext } from '../src/context.js';
import type { Loggers } from '../src/logging/loggers.js';
import { type ClusterManager, createClusterManager } from '../src/upstream/cluster-manager.js';
import { startXds } from '../src/edges/xds/client.js';
import { XdsServer } from '../test/helpers/xds-server.js';
import type { BenchRow } from './types.js';

const ENDPOINTS = 10_000;
const CLUSTERS = 10_000;
const RUNS = 5;

const gc: () => void = (() => {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
})();

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function quietContext(): ServerContext {
  const root = bunyan.createLogger({ name: 'bench', level: 'fatal' });
  return createContext({
    options: DEFAULT_OPTIONS,
    log: { root, get: () => root } as unknown as Loggers,
    history: false,
    exit: () => {},
  });
}

const ADS = { ads: {} };

function managementCluster(port: number): JsonObject {
  return {
    name: 'xds_cluster',
    type: 'STATIC',
    http2_protocol_options: {},
    load_assignment: {
      cluster_name: 'xds_cluster',
      endpoints: [
        {
          lb_endpoints: [
            { endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: port } } } },
          ],
        },
      ],
    },
  };
}

/** 10,000 endpoints; `shift` moves the window so consecutive updates differ in half their members. */
function assignment(shift: number): JsonObject {
  return {
    cluster_name: 'web',
    endpoints: [
      {
        lb_endpoints: Array.from({ length: ENDPOINTS }, (_, k) => {
          const i = k + shift;
          const ip = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
          return { endpoint: { address: { socket_address: { address: ip, port_value: 8080 } } } };
        }),
      },
    ],
  };
}

/** A server with a proxy's control plane (store, cluster manager, xDS client) on it. */
async function start(
  xds: XdsServer,
  resources: JsonObject,
): Promise<{ ctx: ServerContext; manager: ClusterManager; stop(): Promise<void> }> {
  const ctx = quietContext();
  ctx.store.dispatch(
    bootstrapLoaded({
      bootstrap: {
        dynamic_resources: {
          ads_config: { api_type: 'GRPC', grpc_services: [{ envoy_grpc: { cluster_name: 'xds_cluster' } }] },
          ...resources,
        },
        static_resources: {
          clusters: [
            managementCluster(xds.port),
            ...(resources.cds_config
              ? []
              : [{ name: 'web', type: 'EDS', eds_cluster_config: { eds_config: ADS } }]),
          ],
        },
      },
      options: {},
      version: 'bench',
      sources: [],
    }),
    'bench',
  );
  const manager = await createClusterManager(ctx);
  startXds(ctx);
  return {
    ctx,
    manager,
    async stop() {
      await ctx.close();
      manager.close();
    },
  };
}

async function until(check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setImmediate(r));
  }
}

/** Wall ms from the server's write of a 10,000-endpoint update until the balancer has it. */
async function edsUpdate(): Promise<number> {
  const xds = await XdsServer.start();
  xds.set('eds', [assignment(0)], 'v0');
  const proxy = await start(xds, {});
  const first = (shift: number) => `10.${(shift >> 16) & 255}.${(shift >> 8) & 255}.${shift & 255}:8080`;
  await until(() => proxy.manager.get('web')?.hosts[0]?.address === first(0), 30_000);
  const times: number[] = [];
  for (let run = 1; run <= RUNS + 1; run++) {
    const shift = (run % 2) * (ENDPOINTS / 2);
    const update = assignment(shift);
    xds.set('eds', [update], `v${run}`);
    const began = performance.now();
    await until(() => proxy.manager.get('web')?.hosts[0]?.address === first(shift), 30_000);
    if (run > 1) times.push(performance.now() - began);
  }
  await proxy.stop();
  await xds.stop();
  return median(times);
}

/** Wall ms until 10,000 CDS clusters run, and the heap per cluster they cost. */
async function cdsPush(): Promise<{ ms: number; bytes: number }> {
  const xds = await XdsServer.start();
  xds.set('cds', [], 'c0');
  gc();
  const base = process.memoryUsage().heapUsed;
  const proxy = await start(xds, { cds_config: ADS });
  await xds.ack('cds', 'c0', 30_000);
  const clusters = Array.from({ length: CLUSTERS }, (_, i) => ({
    name: `c${i}`,
    type: 'STATIC',
    connect_timeout: '0.25s',
    load_assignment: {
      cluster_name: `c${i}`,
      endpoints: [
        {
          lb_endpoints: [
            {
              endpoint: { address: { socket_address: { address: '10.0.0.1', port_value: 80 + (i % 1000) } } },
            },
          ],
        },
      ],
    },
  }));
  xds.set('cds', clusters, 'c1');
  const began = performance.now();
  await until(() => proxy.manager.all().length === CLUSTERS + 1, 120_000);
  const ms = performance.now() - began;
  gc();
  const bytes = (process.memoryUsage().heapUsed - base) / CLUSTERS;
  await proxy.stop();
  await xds.stop();
  return { ms, bytes };
}

export async function benchXds(): Promise<BenchRow[]> {
  const eds = await edsUpdate();
  const cds = await cdsPush();
  return [
    {
      name: '10k-endpoint EDS update over gRPC -> balancer live',
      value: eds,
      unit: 'ms',
      note: `median of ${RUNS}, wall from the server's write; target < 50 ms`,
    },
    {
      name: '10k clusters pushed by CDS -> all running',
      value: cds.ms,
      unit: 'ms',
      note: 'target < 3000 ms',
    },
    {
      name: 'heap per CDS cluster (10k)',
      value: Math.round(cds.bytes),
      unit: 'bytes',
      note: 'the test server holds its copy too; target < 10 KB',
    },
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const row of await benchXds())
    console.log(`${row.name}: ${row.value.toFixed(1)} ${row.unit} ${row.note ?? ''}`);
  process.exit(0);
}
