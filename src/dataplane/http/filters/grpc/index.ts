import { checkFields } from '../../../../bootstrap/honoured.js';
import type { ClusterScope } from '../../grpc.js';
import type { HttpFilterFactory, StreamFilter } from '../api.js';
import { GrpcBridgeFilter } from './bridge.js';
import { GrpcWebFilter } from './web.js';

/**
 * A gRPC filter (`envoy.filters.http.<kind>`, short `envoy.<kind>`); neither one's v2 message
 * has fields. Each acts at its place in the chain: listed first, `grpc_web` turns a gRPC-Web
 * request into the gRPC one a `grpc_http1_bridge` after it then takes.
 */
function grpcFactory(
  kind: string,
  message: string,
  filter: new (clusterScope: ClusterScope) => StreamFilter,
): HttpFilterFactory<null> {
  const configType = `envoy.config.filter.http.${kind}.v2.${message}`;
  return {
    name: `envoy.filters.http.${kind}`,
    aliases: [`envoy.${kind}`],
    configType,
    typeAliases: { [`envoy.extensions.filters.http.${kind}.v3.${message}`]: configType },
    schema: { file: `envoy/config/filter/http/${kind}/v2.proto` },
    fieldTables: { [message]: {} },
    compile(config, path, report) {
      checkFields(config, path, report, {}, message);
      return null;
    },
    start(_config, ctx) {
      const clusterScope: ClusterScope = (info) => ctx.clusters.get(info.upstreamCluster)?.scope ?? null;
      return () => new filter(clusterScope);
    },
  };
}

export const grpcHttp1BridgeFactory = grpcFactory('grpc_http1_bridge', 'Config', GrpcBridgeFilter);
export const grpcWebFactory = grpcFactory('grpc_web', 'GrpcWeb', GrpcWebFilter);
