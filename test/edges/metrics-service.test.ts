/**
 * The metrics service sink of a real proxy process against a real gRPC server (grpc-js) that
 * decodes each `StreamMetricsMessage` with the reference's schema, written here as the
 * reference writes it (proto2 `io.prometheus.client`, field by field), not with the proxy's
 * own proto/: the node on the first message of each stream only, one family per stat,
 * counters as deltas that add up to each worker's request once at `--concurrency 2`, tags as
 * labels, interval summaries and histograms, `batch_size`, and a stream the server ends
 * opened again at the next flush.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import type { JsonObject } from '../../events/index.js';
import { hcmWithRoutes, httpBootstrap } from '../helpers/bootstraps.js';
import { cluster } from '../helpers/dataplane.js';
import { send } from '../helpers/http-send.js';
import { startProxyProcess } from '../helpers/proxy-process.js';
import { makePki } from '../tls/certs.js';

const SCHEMA = `
syntax = "proto2";
package seen;
message Node { optional string id = 1; optional string cluster = 2; }
message Identifier { optional Node node = 1; }
message LabelPair { optional string name = 1; optional string value = 2; }
message Gauge { optional double value = 1; }
message Counter { optional double value = 1; }
message Quantile { optional double quantile = 1; optional double value = 2; }
message Summary { optional uint64 sample_count = 1; optional double sample_sum = 2; repeated Quantile quantile = 3; }
message Bucket { optional uint64 cumulative_count = 1; optional double upper_bound = 2; }
message Histogram { optional uint64 sample_count = 1; optional double sample_sum = 2; repeated Bucket bucket = 3; }
message Metric {
  repeated LabelPair label = 1; optional Gauge gauge = 2; optional Counter counter = 3;
  optional Summary summary = 4; optional int64 timestamp_ms = 6; optional Histogram histogram = 7;
}
enum MetricType { COUNTER = 0; GAUGE = 1; SUMMARY = 2; UNTYPED = 3; HISTOGRAM = 4; GAUGE_HISTOGRAM = 5; }
message MetricFamily { optional string name = 1; optional string help = 2; optional MetricType type = 3; repeated Metric metric = 4; }
message StreamMetricsMessage { optional Identifier identifier = 1; repeated MetricFamily envoy_metrics = 2; }
`;
const MESSAGE = protobuf.parse(SCHEMA, { keepCase: true }).root.lookupType('seen.StreamMetricsMessage');

interface Family {
  name: string;
  type?: string;
  metric: Array<{
    label?: Array<{ name: string; value: string }>;
    counter?: { value?: number };
    gauge?: { value?: number };
    summary?: { sample_count?: number; quantile?: Array<{ quantile?: number; value?: number }> };
    histogram?: { sample_count?: number; bucket?: Array<{ cumulative_count?: number; upper_bound: number }> };
    timestamp_ms?: number;
  }>;
}
interface Seen {
  stream: number;
  method: string;
  identifier?: { node?: { id?: string; cluster?: string } };
  envoy_metrics?: Family[];
}

/**
 * A metrics service: every message of every stream, decoded; `endAfterFirst` ends each stream
 * after its first message; `tls` serves mTLS, asking for a client certificate of `tls.ca`.
 */
async function metricsServer(endAfterFirst = false, tls?: { ca: string; cert: string; key: string }) {
  const seen: Seen[] = [];
  const server = new grpc.Server();
  let streams = 0;
  const service: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  const handlers: grpc.UntypedServiceImplementation = {};
  for (const version of ['v2', 'v3']) {
    const path = `/envoy.service.metrics.${version}.MetricsService/StreamMetrics`;
    service[version] = {
      path,
      requestStream: true,
      responseStream: false,
      requestSerialize: () => Buffer.alloc(0),
      requestDeserialize: (b: Buffer) =>
        MESSAGE.toObject(MESSAGE.decode(b), { enums: String, longs: Number, arrays: true }),
      responseSerialize: () => Buffer.alloc(0),
      responseDeserialize: () => ({}),
    };
    handlers[version] = (
      call: grpc.ServerReadableStream<Seen, unknown>,
      done: grpc.sendUnaryData<unknown>,
    ) => {
      const stream = ++streams;
      let first = true;
      call.on('data', (m: Seen) => {
        seen.push({ ...m, stream, method: path });
        if (first && endAfterFirst) done(null, {});
        first = false;
      });
      call.on('end', () => done(null, {}));
      call.on('error', () => {});
    };
  }
  server.addService(service, handlers);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      '127.0.0.1:0',
      tls
        ? grpc.ServerCredentials.createSsl(
            Buffer.from(tls.ca),
            [{ cert_chain: Buffer.from(tls.cert), private_key: Buffer.from(tls.key) }],
            true,
          )
        : grpc.ServerCredentials.createInsecure(),
      (err, p) => (err ? reject(err) : resolve(p)),
    ),
  );
  return { port, seen, close: () => server.forceShutdown() };
}

async function until(check: () => boolean, what: () => string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting: ${what()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const families = (seen: Seen[]) => seen.flatMap((m) => m.envoy_metrics ?? []);
const labelsOf = (f: Family) => Object.fromEntries((f.metric[0]?.label ?? []).map((l) => [l.name, l.value]));

async function withProxy(
  sink: JsonObject,
  run: (p: { port: number; seen: Seen[]; admin: (path: string) => Promise<unknown> }) => Promise<void>,
  options: {
    concurrency?: number;
    endAfterFirst?: boolean;
    viaTarget?: boolean;
    /** mTLS: the server's PEMs, and the cluster's `transport_socket` typed_config. */
    tls?: { server: { ca: string; cert: string; key: string }; context: JsonObject };
  } = {},
): Promise<void> {
  const web = http.createServer((_req, res) => setTimeout(() => res.end('ok'), 5));
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
  const ms = await metricsServer(options.endAfterFirst, options.tls?.server);
  const transport: JsonObject = options.tls
    ? {
        transport_socket: {
          name: 'envoy.transport_sockets.tls',
          typed_config: {
            '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext',
            ...options.tls.context,
          },
        },
      }
    : {};
  const grpcService: JsonObject = options.viaTarget
    ? { google_grpc: { target_uri: `127.0.0.1:${ms.port}`, stat_prefix: 'ms' } }
    : { envoy_grpc: { cluster_name: 'metrics' } };
  const base = httpBootstrap(
    [
      cluster('web', [(web.address() as AddressInfo).port]),
      cluster('metrics', [ms.port], { http2_protocol_options: {}, ...transport }),
    ],
    hcmWithRoutes([{ match: { prefix: '/' }, route: { cluster: 'web' } }]),
  );
  const proxy = await startProxyProcess(
    {
      ...base,
      node: { id: 'sidecar-1', cluster: 'fleet' },
      stats_flush_interval: '0.3s',
      stats_sinks: [
        {
          name: 'envoy.stat_sinks.metrics_service',
          typed_config: {
            '@type': 'type.googleapis.com/envoy.config.metrics.v3.MetricsServiceConfig',
            grpc_service: grpcService,
            ...sink,
          },
        },
      ],
    },
    ['--concurrency', String(options.concurrency ?? 2)],
  );
  try {
    await run({ port: await proxy.listenerPort('http'), seen: ms.seen, admin: (p) => proxy.get(p) });
  } finally {
    await proxy.stop();
    ms.close();
    web.closeAllConnections();
    web.close();
  }
}

test('metrics service, v3, deltas, tags as labels, --concurrency 2: each worker request counted once', async () => {
  await withProxy(
    { transport_api_version: 'V3', report_counters_as_deltas: true, emit_tags_as_labels: true },
    async ({ port, seen }) => {
      const statuses = await Promise.all(
        Array.from({ length: 20 }, () => send(port, 'GET', '/').then((a) => a.status)),
      );
      assert.deepEqual(new Set(statuses), new Set([200]));
      const requests = () =>
        families(seen)
          .filter((f) => f.name === 'cluster.upstream_rq' && labelsOf(f)['envoy.response_code'] === '200')
          .reduce((n, f) => n + (f.metric[0]?.counter?.value ?? 0), 0);
      const samples = () =>
        families(seen)
          .filter((f) => f.name === 'cluster.upstream_rq_time' && f.type === 'HISTOGRAM')
          .reduce((n, f) => n + (f.metric[0]?.histogram?.sample_count ?? 0), 0);
      await until(
        () => requests() >= 20 && samples() >= 20,
        () =>
          `${requests()} requests, ${samples()} samples in ${seen.length} messages ${JSON.stringify(families(seen).slice(0, 5))}`,
      );
      await new Promise((r) => setTimeout(r, 1000));
      assert.equal(requests(), 20, 'deltas add up to each request once');
      assert.equal(samples(), 20, 'each request one histogram sample');
      // the node on the stream's first message only, the v3 method
      assert.deepEqual(seen[0]?.identifier?.node, { id: 'sidecar-1', cluster: 'fleet' });
      assert.ok(seen.slice(1).every((m) => m.identifier === undefined && m.stream === 1));
      assert.equal(seen[0]?.method, '/envoy.service.metrics.v3.MetricsService/StreamMetrics');
      const rq = families(seen).find((f) => f.name === 'cluster.upstream_rq');
      assert.deepEqual(labelsOf(rq!), { 'envoy.response_code': '200', 'envoy.cluster_name': 'web' });
      assert.equal(rq?.type, undefined, 'COUNTER is the default, absent on the wire');
      assert.ok((rq?.metric[0]?.timestamp_ms ?? 0) > Date.now() - 120_000);
      // an interval summary of the upstream time with the reference's quantiles
      const summary = families(seen).find(
        (f) =>
          f.name === 'cluster.upstream_rq_time' && f.type === 'SUMMARY' && f.metric[0]?.summary?.sample_count,
      );
      assert.deepEqual(
        // a zero is left off the wire, as proto3 writes it; a proto2 reader reads it as the default 0
        summary?.metric[0]?.summary?.quantile?.map((q) => q.quantile ?? 0),
        [0, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 1],
      );
      const live = families(seen).findLast((f) => f.name === 'server.live');
      assert.equal(live?.type, 'GAUGE');
      assert.equal(live?.metric[0]?.gauge?.value, 1);
    },
  );
});

test('metrics service, google_grpc, v2, totals, summaries only, batch_size, a stream the server ends is opened again', async () => {
  await withProxy(
    { transport_api_version: 'V2', histogram_emit_mode: 'SUMMARY', batch_size: 10 },
    async ({ port, seen }) => {
      await Promise.all(Array.from({ length: 5 }, () => send(port, 'GET', '/').then((a) => a.status)));
      await until(
        () => new Set(seen.map((m) => m.stream)).size >= 3,
        () => `${seen.length} messages on ${new Set(seen.map((m) => m.stream)).size} streams`,
      );
      assert.equal(seen[0]?.method, '/envoy.service.metrics.v2.MetricsService/StreamMetrics');
      for (const m of seen) assert.ok((m.envoy_metrics?.length ?? 0) <= 10, 'batch_size 10');
      // each stream's first message names the node
      const firsts = [...new Set(seen.map((m) => m.stream))].map((s) => seen.find((m) => m.stream === s));
      for (const m of firsts) assert.equal(m?.identifier?.node?.id, 'sidecar-1');
      assert.ok(
        families(seen).every((f) => f.type !== 'HISTOGRAM'),
        'no histogram with SUMMARY',
      );
      const total = () =>
        families(seen)
          .filter((f) => f.name === 'http.ingress_http.downstream_rq_total')
          .map((f) => f.metric[0]?.counter?.value ?? 0);
      await until(
        () => total().includes(5),
        () => String(total()),
      );
      // totals since start: never falling
      assert.deepEqual(
        total(),
        [...total()].sort((a, b) => a - b),
      );
    },
    { viaTarget: true, endAfterFirst: true, concurrency: 1 },
  );
});

test("metrics service over mTLS: the cluster's transport_socket secures the stream, as Istio's envoy_metrics_service", async () => {
  const pki = makePki();
  try {
    const server = pki.leaf('metrics', ['DNS:metrics.test', 'IP:127.0.0.1']);
    const client = pki.leaf('sidecar', ['URI:spiffe://mesh/sidecar']);
    await withProxy(
      { transport_api_version: 'V3' },
      async ({ seen }) => {
        await until(
          () => seen.length >= 2,
          () => `${seen.length} messages`,
        );
        assert.equal(seen[0]?.identifier?.node?.id, 'sidecar-1');
        assert.ok(families(seen).some((f) => f.name === 'server.live'));
      },
      {
        concurrency: 1,
        tls: {
          server: { ca: pki.ca.certPem, cert: server.certPem, key: server.keyPem },
          context: {
            common_tls_context: {
              tls_certificates: [
                { certificate_chain: { filename: client.cert }, private_key: { filename: client.key } },
              ],
              validation_context: {
                trusted_ca: { filename: pki.ca.cert },
                match_subject_alt_names: [{ exact: 'metrics.test' }],
              },
            },
          },
        },
      },
    );
  } finally {
    pki.remove();
  }
});
