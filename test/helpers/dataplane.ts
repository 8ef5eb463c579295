/**
 * In-process pieces for data-plane tests: a server context over a real store, static
 * clusters with a round-robin balancer (a stand-in for the upstream cluster manager, whose
 * sockets are still real), and small TCP peers on 127.0.0.1 port 0.
 */

import * as net from 'node:net';
import { bootstrapLoaded, type JsonObject, type RawCluster } from '../../events/index.js';
import { staticHosts } from '../../reducers/hosts.js';
import { clusterSettings } from '../../reducers/settings/cluster.js';
import { DEFAULT_OPTIONS } from '../../src/cli/parse.js';
import { createContext, type ServerContext } from '../../src/context.js';
import type { ClusterLookup } from '../../src/dataplane/http/types.js';
import { type ClusterTraffic, clusterTraffic } from '../../src/dataplane/pool/cluster-traffic.js';
import { createLoggers } from '../../src/logging/loggers.js';
import { newUpstreamHost } from '../../src/upstream/host.js';
import type { ClusterRuntime, UpstreamHost } from '../../src/upstream/types.js';
import { bootstrapOf, loadYaml } from './bootstrap.js';

/** A context whose store has folded `bootstrap`; shutdown steps run on `close()`. */
export function testContext(bootstrap: JsonObject): ServerContext {
  const ctx = createContext({
    options: { ...DEFAULT_OPTIONS, concurrency: 1 },
    log: createLoggers('fatal'),
    history: false,
    exit: () => {},
  });
  ctx.onShutdown(() => ctx.store.close());
  ctx.store.dispatch(bootstrapLoaded({ bootstrap, options: {}, version: 'test', sources: [] }), 'test');
  return ctx;
}

/**
 * `testContext` of `bootstrap` as serve gets it from the loader: in canonical form, every
 * extension's name resolved to its `@type`, which the compile steps choose by. A bootstrap
 * written as a user writes it (`test/helpers/bootstraps.ts`) needs this: given as written,
 * a router filter named without a typed_config is not found, and the listener fails to bind.
 */
export function loadedContext(bootstrap: JsonObject): ServerContext {
  return testContext(bootstrapOf(loadYaml(JSON.stringify(bootstrap))));
}

/** Round-robin over the healthy static hosts of the snapshot's clusters, rebuilt on each lookup. */
export function staticClusters(ctx: ServerContext): ClusterLookup {
  const hosts = new Map<string, UpstreamHost>();
  const runtimes = new Map<RawCluster, ClusterRuntime<ClusterTraffic>>();
  const traffic = new Map<string, ClusterTraffic>();
  return {
    get(name) {
      const entry = ctx.store.state.clusters[name];
      if (!entry) return undefined;
      const cached = runtimes.get(entry.config);
      if (cached) return cached;
      const settings = clusterSettings(entry.config);
      const members = (entry.hosts.length > 0 ? entry.hosts : staticHosts(entry.config)).map((state) => {
        const key = `${name}/${state.address}`;
        let host = hosts.get(key);
        if (!host) {
          host = newUpstreamHost(state);
          hosts.set(key, host);
        }
        return host;
      });
      let next = 0;
      const built = {
        name,
        settings,
        hosts: members,
        scope: ctx.stats.scope(`cluster.${settings.statName}`),
        config: entry.config,
        lb: {
          choose() {
            const host = members[next % members.length];
            next += 1;
            return host ?? null;
          },
        },
      };
      // As the cluster manager does: a rebuilt runtime carries the cluster's traffic record on.
      const runtime = { ...built, traffic: clusterTraffic(built, traffic.get(name)) };
      traffic.set(name, runtime.traffic);
      runtimes.set(entry.config, runtime);
      return runtime;
    },
  };
}

/** A STATIC cluster of 127.0.0.1 ports. */
export function cluster(name: string, ports: number[], extra: JsonObject = {}): JsonObject {
  return {
    name,
    connect_timeout: '1s',
    load_assignment: {
      cluster_name: name,
      endpoints: [
        {
          lb_endpoints: ports.map((port) => ({
            endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: port } } },
          })),
        },
      ],
    },
    ...extra,
  };
}

/**
 * A bootstrap of a real proxy process: the admin on a port-0 address and the TCP proxy listener
 * `tcp` (port 0) to the cluster `echo` at `upstreamPort`.
 */
export function tcpEchoBootstrap(upstreamPort: number): JsonObject {
  return {
    admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
    static_resources: {
      clusters: [cluster('echo', [upstreamPort])],
      listeners: [tcpListener('tcp', { stat_prefix: 'echo', cluster: 'echo' })],
    },
  };
}

/** A listener on 127.0.0.1 port 0 whose only chain is a `tcp_proxy` to `clusterName`. */
export function tcpListener(name: string, tcpProxy: JsonObject, extra: JsonObject = {}): JsonObject {
  return {
    name,
    address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
    filter_chains: [
      {
        filters: [
          {
            name: 'proxy.filters.network.tcp_proxy',
            typed_config: {
              '@type': 'type.googleapis.com/envoy.config.filter.network.tcp_proxy.v2.TcpProxy',
              ...tcpProxy,
            },
          },
        ],
      },
    ],
    ...extra,
  };
}

/** A TCP server on 127.0.0.1:0 running `onSocket` for each connection. */
export async function tcpServer(
  onSocket: (socket: net.Socket) => void,
  options: net.ServerOpts = { allowHalfOpen: true },
): Promise<{ port: number; server: net.Server; sockets: Set<net.Socket>; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer(options, (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    onSocket(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    server,
    sockets,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A port nothing listens on: bound, read back, released. */
export async function closedPort(): Promise<number> {
  const s = await tcpServer(() => {});
  await s.close();
  return s.port;
}

/** Connects, writes `payload`, half-closes, and collects everything until the peer closes. */
export function exchange(
  port: number,
  payload: string | Buffer,
): Promise<{ data: Buffer; error: Error | null }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let error: Error | null = null;
    const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', (e) => {
      error = e;
    });
    socket.on('close', () => resolve({ data: Buffer.concat(chunks), error }));
    socket.end(payload);
  });
}

/** The port a listener of the snapshot is bound to (waits for `listener/bound`). */
export async function boundPort(ctx: ServerContext, name: string, timeoutMs = 5000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const bound = ctx.store.state.listeners[name]?.boundAddress;
    if (bound) return Number(bound.slice(bound.lastIndexOf(':') + 1));
    if (Date.now() > deadline) throw new Error(`listener ${name} not bound within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * How long a figure may take to settle: with --concurrency 2 a worker that misses the admin's
 * 1 s deadline (a loaded machine) is counted in a later answer. Tens of seconds, as LIVE waits.
 */
export const SETTLE_MS = 30_000;

/**
 * Polls `read` until it returns `want` or `timeoutMs` passes; returns the last value read, for
 * the caller to assert on. For figures that get there eventually (a worker that missed the
 * admin's deadline on a loaded machine is counted in a later answer): the assert stays exact.
 */
export async function settle<T>(read: () => T | Promise<T>, want: T, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (value !== want && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 10));
    value = await read();
  }
  return value;
}

/** `settle` for text: polls `read` until `pattern` matches it; returns the last text, for the caller's assert.match. */
export async function settleMatch(
  read: () => Promise<string>,
  pattern: RegExp,
  timeoutMs: number,
): Promise<string> {
  let text = '';
  await settle(
    async () => {
      text = await read();
      return pattern.test(text);
    },
    true,
    timeoutMs,
  );
  return text;
}

/** Polls `check` (which may ask the proxy, e.g. its admin) until it holds or `timeoutMs` passes. */
export async function until(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 5000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
