import { CONFIG_TYPE } from '../../../bootstrap/extensions.js';
import { checkFields } from '../../../bootstrap/honoured.js';
import type { GrpcFilterKind } from '../grpc-filters.js';
import type { HttpFilterFactory } from './api.js';

/** A gRPC filter; neither one's v2 message has fields. They run in chain order (src/dataplane/http/grpc-filters.ts). */
function grpcFactory(configType: string, message: string, kind: GrpcFilterKind): HttpFilterFactory<null> {
  return {
    configType,
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

export const grpcHttp1BridgeFactory = grpcFactory(CONFIG_TYPE.grpcHttp1Bridge, 'Config', 'grpc_http1_bridge');
export const grpcWebFactory = grpcFactory(CONFIG_TYPE.grpcWeb, 'GrpcWeb', 'grpc_web');
