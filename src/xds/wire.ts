/** Encoding of the discovery messages for `@grpc/grpc-js`, with the loader's schema. */
import type { JsonObject } from '../../events/config.js';
import { messageType } from '../bootstrap/schema.js';
import type { DiscoveryRequest, DiscoveryResponse } from './types.js';

const REQUEST = 'envoy.api.v2.DiscoveryRequest';
const RESPONSE = 'envoy.api.v2.DiscoveryResponse';

function encode(typeName: string, value: object): Buffer {
  const type = messageType(typeName);
  return Buffer.from(type.encode(type.fromObject(value)).finish());
}

function decode<T>(typeName: string, bytes: Buffer): T {
  const type = messageType(typeName);
  return type.toObject(type.decode(bytes), { defaults: true, arrays: true }) as T;
}

export const encodeRequest = (r: DiscoveryRequest): Buffer => encode(REQUEST, r);
export const decodeRequest = (b: Buffer): DiscoveryRequest => decode(REQUEST, b);
export const encodeResponse = (r: DiscoveryResponse): Buffer => encode(RESPONSE, r);
export const decodeResponse = (b: Buffer): DiscoveryResponse => decode(RESPONSE, b);

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

/** The `core.Node` as the gRPC encoder takes it: the canonical node with its Struct metadata rebuilt. */
export function nodeMessage(node: JsonObject): Record<string, unknown> {
  const out: Record<string, unknown> = { ...node };
  if (node.metadata !== undefined) out.metadata = structOf(node.metadata as JsonObject);
  delete out.build_version;
  delete out.user_agent_build_version;
  return out;
}
