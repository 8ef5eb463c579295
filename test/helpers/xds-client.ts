/**
 * The xDS client in the test's own process, over a real store and real sockets: CDS, LDS, EDS or
 * RDS from a gRPC (ADS, v3; or its own per-type stream, v2), REST or file source. What the
 * bad-push regression and fuzz tests drive, so they can read the state and the counters between two responses.
 */
import type { JsonObject } from '../../events/index.js';
import type { ServerContext } from '../../src/context.js';
import { startXds, type XdsClient } from '../../src/edges/xds/client.js';
import { loadedContext } from './dataplane.js';
import { DeltaXdsServer } from './delta-xds-server.js';
import { adsConfig, assignment, GRPC_SOURCE, staticCluster } from './xds-fixtures.js';
import { type SeenRequest, XdsServer } from './xds-server.js';

export interface XdsClientHarness {
  ctx: ServerContext;
  client: XdsClient;
  /** A counter's value (0 when never counted). */
  counter(name: string): number;
  /** The discovered clusters, names and configs, as one string to compare before and after. */
  clusters(): string;
  /** What discovery of `kind` holds (the discovered resources, or the EDS cluster's hosts), as one string. */
  state(kind: DrivenKind): string;
  close(): Promise<void>;
}

/**
 * Where a client reads discovery from: a gRPC server (ADS v3, or v2 per type; state of the
 * world, or delta: `delta` ADS v3, `deltaV2` v2 per type), REST or a file.
 */
export type Source =
  | { grpc: number }
  | { grpcV2: number }
  | { delta: number }
  | { deltaV2: number }
  | { rest: number }
  | { path: string };

/** The delta sources as users write them (the reference's delta examples). */
const DELTA_ADS = { ads: {}, resource_api_version: 'V3' };
const DELTA_V2 = {
  api_config_source: {
    api_type: 'DELTA_GRPC',
    grpc_services: [{ envoy_grpc: { cluster_name: 'xds_cluster' } }],
  },
};
const DELTA_ADS_CONFIG = {
  api_type: 'DELTA_GRPC',
  transport_api_version: 'V3',
  grpc_services: [{ envoy_grpc: { cluster_name: 'xds_cluster' } }],
};

/** The kinds the client fuzz and regression tests drive. */
export type DrivenKind = 'cds' | 'lds' | 'eds' | 'rds';

/**
 * The name each kind's bootstrap watches (the EDS cluster's service, the HCM's route table;
 * CDS and LDS watch every name), and the one a static resource holds, which discovery may
 * not change.
 */
export const WATCHED: Record<DrivenKind, string> = { cds: 'web', lds: 'web', eds: 'svc', rds: 'r' };
export const STATIC_NAME: Partial<Record<DrivenKind, string>> = { cds: 'xds_cluster', lds: 'front' };

/** A valid resource of each kind named `name`, with `extra` fields over it. */
export function validResource(kind: DrivenKind, name: string, extra: JsonObject = {}): JsonObject {
  switch (kind) {
    case 'cds':
      return cluster(name, extra);
    case 'eds':
      return { ...assignment(name, [1]), ...extra };
    case 'lds':
      return {
        name,
        address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
        filter_chains: [{ filters: [tcpProxy] }],
        ...extra,
      };
    case 'rds':
      return {
        name,
        virtual_hosts: [
          {
            name: 'all',
            domains: ['*'],
            routes: [{ match: { prefix: '/' }, direct_response: { status: 200 } }],
          },
        ],
        ...extra,
      };
  }
}

const tcpProxy: JsonObject = {
  name: 'envoy.filters.network.tcp_proxy',
  typed_config: {
    '@type': 'type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy',
    stat_prefix: 'tcp',
    cluster: 'xds_cluster',
  },
};

/** A static listener `front` (port 0): with `routes`, its HCM reads route table `r` from it. */
function frontListener(routes?: JsonObject): JsonObject {
  const hcm = (source: JsonObject): JsonObject => ({
    name: 'envoy.filters.network.http_connection_manager',
    typed_config: {
      '@type':
        'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
      stat_prefix: 'front',
      rds: { config_source: source, route_config_name: WATCHED.rds },
      http_filters: [{ name: 'envoy.filters.http.router' }],
    },
  });
  return {
    name: 'front',
    address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
    filter_chains: [{ filters: [routes ? hcm(routes) : tcpProxy] }],
  };
}

/** The config of one kind on each source, on the management cluster `xds_cluster`. */
export function xdsBootstrap(source: Source, kind: DrivenKind = 'cds'): JsonObject {
  const rest = {
    api_config_source: {
      api_type: 'REST',
      cluster_names: ['xds_cluster'],
      refresh_delay: '0.02s',
      request_timeout: '2s',
    },
  };
  const [config, port]: [JsonObject, number] =
    'grpc' in source
      ? [{ ads: {}, resource_api_version: 'V3' }, source.grpc]
      : 'grpcV2' in source
        ? [GRPC_SOURCE, source.grpcV2]
        : 'delta' in source
          ? [DELTA_ADS, source.delta]
          : 'deltaV2' in source
            ? [DELTA_V2, source.deltaV2]
            : 'rest' in source
              ? [rest, source.rest]
              : [{ path: source.path }, 1];
  const grpc = !('rest' in source) && !('path' in source);
  const xdsCluster = staticCluster('xds_cluster', [port], grpc);
  const eds = {
    name: 'svc',
    connect_timeout: '0.25s',
    type: 'EDS',
    eds_cluster_config: { eds_config: config },
  };
  return {
    dynamic_resources: {
      ...(kind === 'cds' ? { cds_config: config } : kind === 'lds' ? { lds_config: config } : {}),
      ...('grpc' in source ? { ads_config: adsConfig('V3') } : {}),
      ...('delta' in source ? { ads_config: DELTA_ADS_CONFIG } : {}),
    },
    static_resources: {
      clusters: kind === 'eds' ? [xdsCluster, eds] : [xdsCluster],
      ...(kind === 'lds' || kind === 'rds'
        ? { listeners: [frontListener(kind === 'rds' ? config : undefined)] }
        : {}),
    },
  };
}

export async function startXdsClient(bootstrap: JsonObject): Promise<XdsClientHarness> {
  const ctx = loadedContext(bootstrap);
  // No data plane runs here to bind the listeners: a listener response is judged at once.
  const client = await startXds(ctx, false);
  return {
    ctx,
    client,
    counter: (name) => ctx.stats.counter(name).value,
    clusters: () =>
      JSON.stringify(
        Object.values(ctx.store.state.clusters)
          .filter((entry) => entry.addedViaApi)
          .map((entry) => [entry.name, entry.config]),
      ),
    state(kind) {
      const state = ctx.store.state;
      const entries =
        kind === 'cds'
          ? Object.values(state.clusters).filter((entry) => entry.addedViaApi)
          : kind === 'lds'
            ? Object.values(state.listeners).filter((entry) => entry.discovered)
            : kind === 'rds'
              ? Object.values(state.discovery.routes)
              : (state.clusters.svc?.hosts ?? []).map((host) => ({ name: host.address, config: host }));
      return JSON.stringify(entries.map((entry) => [entry.name, entry.config]));
    },
    close: () => ctx.close(),
  };
}

/** A valid discovered cluster (STATIC, so it asks for no endpoints). */
export function cluster(name: string, extra: JsonObject = {}): JsonObject {
  return { ...staticCluster(name, [1]), ...extra };
}

/**
 * The test management server holding the watched resource of `kind` (CDS: the cluster `web`) at `version`, and a client over
 * `transport` that accepted it (`ack`: its ACK); `close` stops both.
 */
export async function servedClient(
  transport: 'grpc' | 'grpcV2' | 'rest',
  version: string,
  kind: DrivenKind = 'cds',
): Promise<{ xds: XdsServer; h: XdsClientHarness; ack: SeenRequest; close(): Promise<void> }> {
  const xds = await XdsServer.start();
  const source =
    transport === 'rest'
      ? { rest: await xds.startRest() }
      : transport === 'grpc'
        ? { grpc: xds.port }
        : { grpcV2: xds.port };
  xds.set(kind, [validResource(kind, WATCHED[kind])], version);
  const h = await startXdsClient(xdsBootstrap(source, kind));
  const close = async () => {
    await h.close();
    await xds.stop();
  };
  try {
    await h.client.initialized;
    return { xds, h, ack: await xds.ack(kind, version), close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** The test's delta management server holding the watched resource of `kind`, and a client over delta ADS (v3) that ACKed it. */
export async function servedDeltaClient(
  kind: DrivenKind = 'cds',
): Promise<{ xds: DeltaXdsServer; h: XdsClientHarness; close(): Promise<void> }> {
  const xds = await DeltaXdsServer.start();
  xds.set(kind, [validResource(kind, WATCHED[kind])], 'start');
  const h = await startXdsClient(xdsBootstrap({ delta: xds.port }, kind));
  const close = async () => {
    await h.close();
    await xds.stop();
  };
  try {
    await h.client.initialized;
    await xds.answer(kind);
    return { xds, h, close };
  } catch (err) {
    await close();
    throw err;
  }
}
