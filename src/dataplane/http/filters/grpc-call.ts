/**
 * A unary gRPC call from a filter to a service cluster (`grpc_service.envoy_grpc`): one
 * length-prefixed message out, one back, the status from the trailers (or the head of a
 * trailers-only answer). Whatever the peer sends, the result is data: an answer that is not
 * one well-formed message is a failure naming why.
 */
import type { JsonObject } from '../../../../events/config.js';
import { listOf, objectOf } from '../../../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable, notYet } from '../../../bootstrap/honoured.js';
import { serviceMessageType } from '../../../bootstrap/proto-root.js';
import type { Report } from '../../../bootstrap/report.js';
import type { ClusterLookup } from '../../pool/cluster-traffic.js';
import { flatValue as flatHeader } from '../grpc.js';
import { durationField } from '../timeouts.js';
import { type ClusterCall, callCluster } from './cluster-call.js';

export type GrpcCallResult =
  | { ok: true; message: Record<string, unknown> }
  /** `grpcStatus` is the peer's non-zero status, or -1 when the call failed below gRPC. */
  | { ok: false; grpcStatus: number; why: string };

/** What a unary call sends. */
export interface GrpcCallSpec {
  cluster: string;
  /** `/package.Service/Method`. */
  path: string;
  /** The schema's request and response message names (src/bootstrap/schema.ts). */
  requestType: string;
  responseType: string;
  timeoutMs: number;
  /** `initial_metadata`: flat `[name, value, ...]`. */
  metadata: string[];
}

/** A filter's `grpc_service` (ext_authz, ratelimit): the cluster it calls, its timeout and metadata. */
export interface FilterGrpcService {
  cluster: string;
  timeoutMs: number;
  /** `initial_metadata`, flat, lowercase names. */
  metadata: string[];
}

/**
 * The `GrpcService` fields a filter's service call honours, keyed apart from the xDS
 * `GrpcService` (src/config/config-source.ts), which honours fewer.
 */
export const FILTER_GRPC_SERVICE_TABLES: Record<string, FieldTable> = {
  FilterGrpcService: {
    ...acting('envoy_grpc', 'timeout', 'initial_metadata'),
    google_grpc: notYet('google_grpc for a filter (use envoy_grpc with a cluster)'),
  },
  EnvoyGrpc: acting('cluster_name'),
};

/** Compiles a filter's `GrpcService`; `defaultTimeoutMs` when it sets none. */
export function compileFilterGrpcService(
  raw: JsonObject,
  path: string,
  report: Report,
  defaultTimeoutMs: number,
): FilterGrpcService {
  checkFields(raw, path, report, FILTER_GRPC_SERVICE_TABLES.FilterGrpcService as FieldTable, 'GrpcService');
  const envoy = objectOf(raw.envoy_grpc);
  checkFields(
    envoy,
    `${path}.envoy_grpc`,
    report,
    FILTER_GRPC_SERVICE_TABLES.EnvoyGrpc as FieldTable,
    'EnvoyGrpc',
  );
  const cluster = typeof envoy.cluster_name === 'string' ? envoy.cluster_name : '';
  if (raw.google_grpc === undefined && cluster === '')
    report.error(`${path}.envoy_grpc.cluster_name`, 'required field missing', 'missing');
  return {
    cluster,
    timeoutMs: durationField(raw.timeout, defaultTimeoutMs, `${path}.timeout`, report),
    metadata: listOf(raw.initial_metadata).flatMap((h) => [
      String(h.key ?? '').toLowerCase(),
      String(h.value ?? ''),
    ]),
  };
}

/** Sends one message and calls `done` once with the decoded answer (defaults filled, 64-bit as numbers). */
export function grpcUnary(
  clusters: ClusterLookup,
  spec: GrpcCallSpec,
  message: Record<string, unknown>,
  done: (result: GrpcCallResult) => void,
): ClusterCall {
  const type = serviceMessageType(spec.requestType);
  const payload = type.encode(type.fromObject(message)).finish();
  const body = Buffer.alloc(5 + payload.length);
  body.writeUInt32BE(payload.length, 1);
  body.set(payload, 5);
  const headers = ['content-type', 'application/grpc', 'te', 'trailers', ...spec.metadata];
  if (spec.timeoutMs > 0) headers.push('grpc-timeout', `${spec.timeoutMs}m`);
  return callCluster(
    clusters,
    {
      cluster: spec.cluster,
      method: 'POST',
      path: spec.path,
      // As the reference: the service cluster's name is the authority.
      authority: spec.cluster,
      headers,
      body,
      timeoutMs: spec.timeoutMs,
      http2: true,
    },
    (result) => {
      if (!result.ok) return done({ ok: false, grpcStatus: -1, why: result.reason });
      done(grpcAnswer(spec.responseType, result.status, result.headers, result.body, result.trailers));
    },
  );
}

/** The outcome of a whole gRPC answer: a decoded message, or why it is none. */
export function grpcAnswer(
  responseType: string,
  status: number,
  headers: string[],
  body: Buffer,
  trailers: string[],
): GrpcCallResult {
  if (status !== 200) return { ok: false, grpcStatus: -1, why: `HTTP status ${status}` };
  const raw = flatHeader(trailers, 'grpc-status') ?? flatHeader(headers, 'grpc-status');
  if (raw === undefined) return { ok: false, grpcStatus: -1, why: 'no grpc-status' };
  const grpcStatus = /^\d+$/.test(raw) ? Number(raw) : -1;
  if (grpcStatus !== 0) return { ok: false, grpcStatus, why: `grpc-status ${raw}` };
  if (body.length < 5) return { ok: false, grpcStatus: -1, why: 'no message' };
  if (body[0] !== 0) return { ok: false, grpcStatus: -1, why: 'compressed message' };
  const length = body.readUInt32BE(1);
  if (length !== body.length - 5) return { ok: false, grpcStatus: -1, why: 'not one whole message' };
  try {
    const type = serviceMessageType(responseType);
    const message = type.toObject(type.decode(body.subarray(5)), {
      defaults: true,
      arrays: true,
      longs: Number,
      enums: String,
    }) as Record<string, unknown>;
    return { ok: true, message };
  } catch (err) {
    return { ok: false, grpcStatus: -1, why: `undecodable message: ${(err as Error).message}` };
  }
}
