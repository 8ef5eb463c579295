import { checkFields } from '../../../bootstrap/honoured.js';
import type { GrpcFilterKind } from '../grpc-filters.js';
import type { HttpFilterFactory } from './api.js';

/**
 * A gRPC filter (`envoy.filters.http.<kind>`, short `envoy.<kind>`); neither one's v2 message
 * has fields. They run in chain order (src/dataplane/http/grpc-filters.ts).
 */
function grpcFactory(kind: GrpcFilterKind, message: string): HttpFilterFactory<null> {
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
    install(chain) {
      chain.grpc.push(kind);
    },
  };
}

export const grpcHttp1BridgeFactory = grpcFactory('grpc_http1_bridge', 'Config');
export const grpcWebFactory = grpcFactory('grpc_web', 'GrpcWeb');
