/**
 * An HTTP connection manager in the test's own process behind a listener on 127.0.0.1:0, its
 * clusters of fixed hosts, and the configs and raw exchanges the HTTP data-plane tests send it.
 */
import * as net from 'node:net';
import type { JsonObject, RawCluster } from '../../events/config.js';
import { clusterSettings } from '../../reducers/settings/cluster.js';
import type { HostState } from '../../reducers/state.js';
import { DEFAULT_OPTIONS } from '../../src/cli/parse.js';
import { createContext, type ServerContext } from '../../src/context.js';
import type { StreamInfo } from '../../src/dataplane/access-log/stream-info.js';
import { HttpConnectionManager } from '../../src/dataplane/http/manager.js';
import type { NetworkFilterHandler } from '../../src/dataplane/network-filter.js';
import { type ClusterTraffic, clusterTraffic } from '../../src/dataplane/pool/cluster-traffic.js';
import { destroyPools } from '../../src/dataplane/pool/index.js';
import { createLoggers } from '../../src/logging/loggers.js';
import { newUpstreamHost } from '../../src/upstream/host.js';
import type { ClusterRuntime, UpstreamHost } from '../../src/upstream/types.js';
import { compileTestHcm } from './compile.js';

/** A bare server context for data plane tests: real store and stats, no admin. */
export function testContext(): ServerContext {
  return createContext({
    options: { ...DEFAULT_OPTIONS },
    log: createLoggers('fatal'),
    history: false,
    exit: () => {},
  });
}

/** A healthy data-plane host for `ip:port`. */
export function hostOf(address: string): UpstreamHost {
  const colon = address.lastIndexOf(':');
  const ip = address.slice(0, colon);
  const port = Number(address.slice(colon + 1));
  const state: HostState = {
    address,
    ip,
    port,
    hostname: '',
    weight: 1,
    priority: 0,
    locality: { region: '', zone: '', sub_zone: '' },
    metadata: {},
    edsHealth: 'HEALTHY',
    failedActiveHc: false,
    failedOutlierCheck: false,
  };
  return newUpstreamHost(state);
}

/** A cluster runtime over fixed addresses with a plain round-robin balancer. */
export function testCluster(
  ctx: ServerContext,
  raw: RawCluster,
  addresses: string[],
): ClusterRuntime<ClusterTraffic> {
  const hosts = addresses.map(hostOf);
  let next = 0;
  const settings = clusterSettings(raw);
  const built = {
    name: raw.name,
    settings,
    hosts,
    lb: { choose: () => (hosts.length === 0 ? null : (hosts[next++ % hosts.length] as UpstreamHost)) },
    scope: ctx.stats.scope(`cluster.${settings.statName}`),
    config: raw,
  };
  return { ...built, traffic: clusterTraffic(built, undefined) };
}

export interface TestProxy {
  ctx: ServerContext;
  hcm: NetworkFilterHandler;
  port: number;
  clusters: Map<string, ClusterRuntime<ClusterTraffic>>;
  counter(name: string): number;
  gauge(name: string): number;
  close(): Promise<void>;
}

/** Starts an HTTP connection manager behind a listener on 127.0.0.1:0. */
export async function startProxy(
  hcmConfig: Record<string, unknown>,
  clusters: Array<{ raw: RawCluster; addresses: string[] }>,
): Promise<TestProxy> {
  const ctx = testContext();
  const map = new Map<string, ClusterRuntime<ClusterTraffic>>();
  for (const c of clusters) map.set(c.raw.name, testCluster(ctx, c.raw, c.addresses));
  const hcm = new HttpConnectionManager(compileTestHcm(hcmConfig), {
    ctx,
    clusters: { get: (name) => map.get(name) },
    listenerName: 'test',
  });
  const server = net.createServer((socket) => hcm.handle(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    ctx,
    hcm,
    port,
    clusters: map,
    counter: (name) => ctx.stats.counters.get(name)?.value ?? 0,
    gauge: (name) => ctx.stats.gauges.get(name)?.value ?? 0,
    async close() {
      server.close();
      await hcm.close();
      for (const c of map.values()) destroyPools(c);
    },
  };
}

/** Starts `startProxy(hcm, clusters)`, runs `run` with it and closes it, however `run` ends. */
export async function withTestProxy(
  hcm: Record<string, unknown>,
  clusters: Array<{ raw: RawCluster; addresses: string[] }>,
  run: (proxy: TestProxy) => Promise<void>,
): Promise<void> {
  const proxy = await startProxy(hcm, clusters);
  try {
    await run(proxy);
  } finally {
    await proxy.close();
  }
}

/** The record of every stream `proxy` ends from now on (what its access log would be given), in order. */
export function loggedStreams(proxy: TestProxy): StreamInfo[] {
  const logged: StreamInfo[] = [];
  const hcm = proxy.hcm as HttpConnectionManager;
  const onStreamEnd = hcm.onStreamEnd.bind(hcm);
  hcm.onStreamEnd = (info) => {
    logged.push(info);
    onStreamEnd(info);
  };
  return logged;
}

/** An HCM typed_config routing everything under `/` to `cluster`, with extra routes first. */
export function hcmConfig(
  cluster: string,
  extraRoutes: unknown[] = [],
  routeExtras: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    stat_prefix: 'ingress',
    route_config: {
      name: 'local',
      virtual_hosts: [
        {
          name: 'all',
          domains: ['*'],
          routes: [...extraRoutes, { match: { prefix: '/' }, route: { cluster, ...routeExtras } }],
        },
      ],
    },
    http_filters: [{ name: 'proxy.filters.http.router' }],
  };
}

/** A `route_config` answering every request itself with 200 and `body` (no upstream). */
export function answeringRoutes(body: string): JsonObject {
  return {
    virtual_hosts: [
      {
        name: 'all',
        domains: ['*'],
        routes: [{ match: { prefix: '/' }, direct_response: { status: 200, body: { inline_string: body } } }],
      },
    ],
  };
}

/** Sends raw bytes and collects everything until the server closes or `untilMs` passes. */
export function rawExchange(port: number, data: string | Buffer, untilMs = 1000): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(), untilMs);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('latin1'));
    });
    socket.on('error', () => {});
    socket.write(data);
  });
}
