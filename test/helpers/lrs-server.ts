/**
 * A small load reporting server (LRS) for tests: `StreamLoadStats` in v2 and v3 on one gRPC
 * port. A test sets the `LoadStatsResponse` (proto3 JSON); it goes to every open stream at
 * once and to each new stream after its first request, as a management server asks a proxy
 * that connects. Every `LoadStatsRequest` is recorded, so tests can wait for a report.
 */
import * as grpc from '@grpc/grpc-js';
import { messageType } from '../../src/bootstrap/schema.js';
import type { ClusterStats, EndpointStats, LocalityStats } from '../../src/edges/xds/lrs/ledger.js';
import { decodeMessage, encodeMessage } from '../../src/edges/xds/wire.js';
import { messageFromJson } from './xds-server.js';

type JsonObject = Parameters<typeof messageFromJson>[1];

const REQUEST = 'envoy.service.load_stats.v2.LoadStatsRequest';
const RESPONSE = 'envoy.service.load_stats.v2.LoadStatsResponse';

export const LRS_METHODS = {
  V2: '/envoy.service.load_stats.v2.LoadReportingService/StreamLoadStats',
  V3: '/envoy.service.load_stats.v3.LoadReportingService/StreamLoadStats',
} as const;

/** A `ClusterStats` as decoded: every field present. */
export type SeenClusterStats = ClusterStats & {
  cluster_service_name: string;
  upstream_locality_stats: Array<LocalityStats & { upstream_endpoint_stats: EndpointStats[] }>;
};

/** One `LoadStatsRequest` as decoded (every field present), with the stream it came on. */
export interface SeenReport {
  stream: number;
  method: string;
  node: { id: string; cluster: string; client_features: string[] } | null;
  cluster_stats: SeenClusterStats[];
}

type Call = grpc.ServerDuplexStream<SeenReport, Record<string, unknown>>;

export class LrsServer {
  readonly reports: SeenReport[] = [];
  port = 0;
  private response: Record<string, unknown> | null = null;
  private readonly calls = new Set<Call>();
  private server: grpc.Server | null = null;
  private nextStream = 1;

  /** Listens on 127.0.0.1 (`port` 0 picks one; a restart passes the old one). */
  static async start(port = 0): Promise<LrsServer> {
    const lrs = new LrsServer();
    const server = new grpc.Server();
    const service: Record<string, grpc.MethodDefinition<SeenReport, Record<string, unknown>>> = {};
    const handlers: grpc.UntypedServiceImplementation = {};
    for (const [version, path] of Object.entries(LRS_METHODS)) {
      service[version] = {
        path,
        requestStream: true,
        responseStream: true,
        requestSerialize: () => Buffer.alloc(0),
        requestDeserialize: (b: Buffer) => decodeMessage(REQUEST, b),
        responseSerialize: (r: Record<string, unknown>) => encodeMessage(RESPONSE, r),
        responseDeserialize: () => ({}),
        originalName: version,
      };
      handlers[version] = (call: Call) => lrs.onStream(call, path);
    }
    server.addService(service, handlers);
    lrs.port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err, bound) =>
        err ? reject(err) : resolve(bound),
      ),
    );
    lrs.server = server;
    return lrs;
  }

  /** Asks every stream, and every later one, for load reports (a `LoadStatsResponse` as proto3 JSON). */
  respond(json: JsonObject): void {
    this.response = messageFromJson(messageType(RESPONSE), json);
    for (const call of this.calls) call.write(this.response);
  }

  /** Streams opened so far. */
  get streams(): number {
    return this.nextStream - 1;
  }

  /** Resolves with the first report from index `from` on that matches; fails after `timeoutMs`. */
  async waitFor(match: (r: SeenReport) => boolean, from = 0, timeoutMs = 10_000): Promise<SeenReport> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.reports.slice(from).find(match);
      if (hit) return hit;
      if (Date.now() > deadline)
        throw new Error(
          `no matching load report within ${timeoutMs} ms; seen:\n${this.reports.map((r) => JSON.stringify(r)).join('\n')}`,
        );
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Stops at once: every stream is cut, as when the server dies. */
  async stop(): Promise<void> {
    for (const call of this.calls) call.destroy();
    this.calls.clear();
    this.server?.forceShutdown();
    this.server = null;
  }

  private onStream(call: Call, method: string): void {
    const stream = this.nextStream++;
    let first = true;
    this.calls.add(call);
    call.on('data', (request: SeenReport) => {
      this.reports.push({ ...request, stream, method });
      if (first && this.response) call.write(this.response);
      first = false;
    });
    call.on('error', () => this.calls.delete(call));
    call.on('end', () => {
      this.calls.delete(call);
      call.end();
    });
  }
}
