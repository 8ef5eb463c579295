/** Encoding of the discovery messages for `@grpc/grpc-js`, with the loader's schema. */
import type { JsonObject } from '../../../events/config.js';
import { objectOf } from '../../../reducers/settings/values.js';
import { messageType } from '../../bootstrap/schema.js';
import type { Options } from '../../options.js';
import { VERSION } from '../../version.js';
import type {
  DeltaDiscoveryRequest,
  DeltaDiscoveryResponse,
  DiscoveryRequest,
  DiscoveryResponse,
} from './types.js';

const REQUEST = 'envoy.api.v2.DiscoveryRequest';
const RESPONSE = 'envoy.api.v2.DiscoveryResponse';
const DELTA_REQUEST = 'envoy.api.v2.DeltaDiscoveryRequest';
const DELTA_RESPONSE = 'envoy.api.v2.DeltaDiscoveryResponse';

/** A message of the loader's schema, from a plain object (field names as written in the .proto). */
export function encodeMessage(typeName: string, value: object): Buffer {
  const type = messageType(typeName);
  return Buffer.from(type.encode(type.fromObject(value)).finish());
}

/** A message as a plain object, every field present (defaults filled), 64-bit integers as numbers. */
export function decodeMessage<T>(typeName: string, bytes: Buffer): T {
  const type = messageType(typeName);
  return type.toObject(type.decode(bytes), { defaults: true, arrays: true, longs: Number }) as T;
}

export const encodeRequest = (r: DiscoveryRequest): Buffer => encodeMessage(REQUEST, r);
export const decodeRequest = (b: Buffer): DiscoveryRequest => decodeMessage(REQUEST, b);
export const encodeResponse = (r: DiscoveryResponse): Buffer => encodeMessage(RESPONSE, r);
export const decodeResponse = (b: Buffer): DiscoveryResponse => decodeMessage(RESPONSE, b);
export const encodeDeltaRequest = (r: DeltaDiscoveryRequest): Buffer => encodeMessage(DELTA_REQUEST, r);
export const decodeDeltaRequest = (b: Buffer): DeltaDiscoveryRequest => decodeMessage(DELTA_REQUEST, b);
export const encodeDeltaResponse = (r: DeltaDiscoveryResponse): Buffer => encodeMessage(DELTA_RESPONSE, r);
export const decodeDeltaResponse = (b: Buffer): DeltaDiscoveryResponse => decodeMessage(DELTA_RESPONSE, b);

/** `google.protobuf.Value` as protobufjs's bundled (camelCase) schema spells it. */
function jsonValue(json: unknown): Record<string, unknown> {
  if (json === null || json === undefined) return { nullValue: 0 };
  if (typeof json === 'number') return { numberValue: json };
  if (typeof json === 'string') return { stringValue: json };
  if (typeof json === 'boolean') return { boolValue: json };
  if (Array.isArray(json)) return { listValue: { values: json.map(jsonValue) } };
  return { structValue: structOf(json as JsonObject) };
}

function structOf(json: JsonObject): Record<string, unknown> {
  return { fields: Object.fromEntries(Object.entries(json).map(([k, v]) => [k, jsonValue(v)])) };
}

/**
 * The node every management server is told (xDS and load reports): the bootstrap's `node`
 * with `--service-node` / `--service-cluster` over it, as proto3 JSON.
 */
export function localNode(
  bootstrap: JsonObject,
  options: Pick<Options, 'serviceNode' | 'serviceCluster'>,
): JsonObject {
  return {
    // A raw read by design: the node is told to the server as written, not acted on here.
    ...objectOf(bootstrap.node),
    ...(options.serviceNode ? { id: options.serviceNode } : {}),
    ...(options.serviceCluster ? { cluster: options.serviceCluster } : {}),
    user_agent_name: 'proxy',
    user_agent_version: VERSION,
  };
}

/** The `core.Node` as the gRPC encoder takes it: the canonical node with its Struct metadata rebuilt. */
export function nodeMessage(node: JsonObject): Record<string, unknown> {
  const out: Record<string, unknown> = { ...node };
  if (node.metadata !== undefined) out.metadata = structOf(node.metadata as JsonObject);
  delete out.build_version;
  delete out.user_agent_build_version;
  return out;
}
