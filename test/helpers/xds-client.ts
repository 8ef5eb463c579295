/**
 * The xDS client in the test's own process, over a real store and real sockets: CDS from a
 * gRPC (ADS, v3; or its own per-type stream, v2), REST or file source. What the bad-push regression and fuzz tests drive, so
 * they can read the state and the counters between two responses.
 */
import type { JsonObject } from '../../events/index.js';
import type { ServerContext } from '../../src/context.js';
import { startXds, type XdsClient } from '../../src/xds/client.js';
import { loadedContext } from './dataplane.js';
import { adsConfig, GRPC_SOURCE, staticCluster } from './xds-fixtures.js';
import { type SeenRequest, XdsServer } from './xds-server.js';

export interface XdsClientHarness {
  ctx: ServerContext;
  client: XdsClient;
  /** A counter's value (0 when never counted). */
  counter(name: string): number;
  /** The discovered clusters, names and configs, as one string to compare before and after. */
  clusters(): string;
  close(): Promise<void>;
}

/** The CDS config of each source, on the management cluster `xds_cluster`. */
export function cdsBootstrap(
  source: { grpc: number } | { grpcV2: number } | { rest: number } | { path: string },
): JsonObject {
  const rest = {
    api_config_source: {
      api_type: 'REST',
      cluster_names: ['xds_cluster'],
      refresh_delay: '0.02s',
      request_timeout: '2s',
    },
  };
  const [cds, port]: [JsonObject, number] =
    'grpc' in source
      ? [{ ads: {}, resource_api_version: 'V3' }, source.grpc]
      : 'grpcV2' in source
        ? [GRPC_SOURCE, source.grpcV2]
        : 'rest' in source
          ? [rest, source.rest]
          : [{ path: source.path }, 1];
  return {
    dynamic_resources: {
      cds_config: cds,
      ...('grpc' in source ? { ads_config: adsConfig('V3') } : {}),
    },
    static_resources: {
      clusters: [staticCluster('xds_cluster', [port], 'grpc' in source || 'grpcV2' in source)],
    },
  };
}

export async function startXdsClient(bootstrap: JsonObject): Promise<XdsClientHarness> {
  const ctx = loadedContext(bootstrap);
  const client = await startXds(ctx);
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
    close: () => ctx.close(),
  };
}

/** A valid discovered cluster (STATIC, so it asks for no endpoints). */
export function cluster(name: string, extra: JsonObject = {}): JsonObject {
  return { ...staticCluster(name, [1]), ...extra };
}

/**
 * The test management server holding the cluster `web` at `version`, and a client over
 * `transport` that accepted it (`ack`: its ACK); `close` stops both.
 */
export async function servedClient(
  transport: 'grpc' | 'grpcV2' | 'rest',
  version: string,
): Promise<{ xds: XdsServer; h: XdsClientHarness; ack: SeenRequest; close(): Promise<void> }> {
  const xds = await XdsServer.start();
  const source =
    transport === 'rest'
      ? { rest: await xds.startRest() }
      : transport === 'grpc'
        ? { grpc: xds.port }
        : { grpcV2: xds.port };
  xds.set('cds', [cluster('web')], version);
  const h = await startXdsClient(cdsBootstrap(source));
  const close = async () => {
    await h.close();
    await xds.stop();
  };
  try {
    await h.client.initialized;
    return { xds, h, ack: await xds.ack('cds', version), close };
  } catch (err) {
    await close();
    throw err;
  }
}
