/**
 * The metrics service sink (`envoy.stat_sinks.metrics_service`): at each stats flush, the
 * flush's Prometheus metric families go as one `StreamMetricsMessage` (or `batch_size` ones)
 * on a client stream `MetricsService.StreamMetrics` to a member of the `envoy_grpc` cluster
 * or the `google_grpc` target (TLS as the cluster's `transport_socket` says, as a management
 * server's). As the reference's, the stream is opened at the first flush,
 * its first message says who this is (the node), and a stream that ends is opened again at
 * the next flush; nothing the server answers is acted on.
 */
import type * as Grpc from '@grpc/grpc-js';
import type bunyan from 'bunyan';
import type { JsonObject } from '../../events/config.js';
import { entryOf } from '../../reducers/names.js';
import type { ApiVersion } from '../config/config-source.js';
import { compiledStatsSettings } from '../config/stats.js';
import type { MetricsServiceSinkSpec } from '../config/stats-sinks.js';
import type { Store } from '../control/store.js';
import type { Loggers } from '../logging/loggers.js';
import type { Options } from '../options.js';
import { FamilyMaker, type MetricFamily } from '../stats/sinks/metric-families.js';
import type { MetricSnapshot, StatsSink } from '../stats/sinks/snapshot.js';
import type { StatsRuntime } from '../stats/start.js';
import type { StatsStore } from '../stats/store.js';
import { channelCredentials, channelOptions, grpc } from './xds/grpc-channel.js';
import { endCall, grpcTarget, streamMetadata } from './xds/grpc-stream.js';
import { type ManagementSecurity, managementSecurity } from './xds/management-tls.js';
import { encodeMessage, localNode, nodeMessage } from './xds/wire.js';

const METHOD: Record<ApiVersion, string> = {
  V2: '/envoy.service.metrics.v2.MetricsService/StreamMetrics',
  V3: '/envoy.service.metrics.v3.MetricsService/StreamMetrics',
};
// The v3 messages have the v2 ones' field numbers, so the v2 messages carry both versions.
const MESSAGE = 'envoy.service.metrics.v2.StreamMetricsMessage';

/**
 * What a server that reads too slowly may leave unsent before the stream is given up (and
 * opened again at the next flush), so a stalled server cannot grow the heap without bound.
 */
export const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

interface StreamMetricsMessage {
  identifier?: { node: Record<string, unknown> };
  envoy_metrics: MetricFamily[];
}

type Call = Grpc.ClientWritableStream<StreamMetricsMessage>;

/** The part of the server context the sink runs on. */
export interface MetricsServiceContext {
  readonly options: Options;
  readonly store: Store;
  readonly log: Loggers;
  readonly stats: StatsStore;
  readonly statsRuntime: StatsRuntime;
}

export class MetricsServiceSink implements StatsSink {
  private readonly families: FamilyMaker;
  private readonly log: bunyan;
  private client: Grpc.Client | null = null;
  private call: Call | null = null;
  /** Which member of the cluster to dial next. */
  private pick = 0;
  /** Why the last flush could not open a stream ('' when it could). */
  private lastWhy = '';

  constructor(
    private readonly ctx: MetricsServiceContext,
    private readonly spec: MetricsServiceSinkSpec,
    private readonly node: Record<string, unknown>,
  ) {
    this.log = ctx.log.get('main');
    this.families = new FamilyMaker({
      countersAsDeltas: spec.countersAsDeltas,
      tags: spec.labels ? ctx.statsRuntime.tags : null,
      summary: spec.summary,
      histogram: spec.histogram,
      buckets: ctx.statsRuntime.buckets,
    });
  }

  flush(snapshot: MetricSnapshot): void {
    const families = this.families.families(snapshot, Date.now());
    const size = this.spec.batchSize > 0 ? this.spec.batchSize : Math.max(1, families.length);
    // An empty flush still goes, as the reference's: the server sees the proxy is there.
    for (let at = 0; at === 0 || at < families.length; at += size) this.send(families.slice(at, at + size));
  }

  private send(batch: MetricFamily[]): void {
    let call = this.call;
    const message: StreamMetricsMessage = { envoy_metrics: batch };
    if (!call) {
      call = this.open();
      if (!call) return;
      message.identifier = { node: this.node };
    }
    if (call.writableLength > MAX_BUFFERED_BYTES) {
      this.log.warn(`metrics service at ${this.where()}: the server is not reading; stream closed`);
      this.hangUp();
      return;
    }
    call.write(message);
  }

  private where(): string {
    const s = this.spec.service;
    return s.kind === 'target' ? s.target : `cluster '${s.cluster}'`;
  }

  private target(): string | null {
    const s = this.spec.service;
    if (s.kind === 'target') return s.target;
    const hosts = entryOf(this.ctx.store.state.clusters, s.cluster)?.hosts ?? [];
    if (hosts.length === 0) return null;
    return grpcTarget(hosts[this.pick++ % hosts.length]!);
  }

  /**
   * How the service is dialled: an `envoy_grpc` cluster's `transport_socket` secures the
   * stream as a management server's (its secrets by SDS too); `google_grpc` in plain text.
   */
  private security(): ManagementSecurity {
    const s = this.spec.service;
    return s.kind === 'cluster'
      ? managementSecurity(this.ctx.store.state, this.ctx.stats, s.cluster)
      : { tls: null, keepalive: null };
  }

  private open(): Call | null {
    const target = this.target();
    const security = this.security();
    if (!target || 'error' in security) {
      const why = target ? ('error' in security ? security.error : '') : 'no member to send to';
      // Said once while it lasts (a sidecar waits for its mesh), not at every flush.
      if (why !== this.lastWhy) this.log.warn(`metrics service at ${this.where()}: ${why}; flushes dropped`);
      this.lastWhy = why;
      return null;
    }
    this.lastWhy = '';
    const { Client } = grpc();
    const client = new Client(target, channelCredentials(security.tls), channelOptions(security.keepalive));
    const call: Call = client.makeClientStreamRequest(
      METHOD[this.spec.transport],
      (m: StreamMetricsMessage) => encodeMessage(MESSAGE, m),
      () => ({}),
      streamMetadata(this.spec.metadata),
      (err: Grpc.ServiceError | null) => {
        if (call !== this.call) return;
        this.hangUp();
        this.log.warn(
          `metrics service stream to ${target} ended: ${err ? `${err.code}: ${err.details}` : 'by the server'}; opened again at the next flush`,
        );
      },
    );
    this.client = client;
    this.call = call;
    return call;
  }

  private hangUp(): void {
    const call = this.call;
    const client = this.client;
    this.call = null;
    this.client = null;
    endCall(call, client);
  }

  close(): void {
    this.hangUp();
  }
}

/** Adds a sink to the stats edge for each metrics service of the bootstrap's `stats_sinks`. */
export function startMetricsServices(ctx: MetricsServiceContext): void {
  const bootstrap: JsonObject = ctx.store.state.bootstrap?.config ?? {};
  const specs = compiledStatsSettings(bootstrap).sinks.filter((s) => s.kind === 'metrics_service');
  if (specs.length === 0) return;
  const node = nodeMessage(localNode(bootstrap, ctx.options));
  for (const spec of specs) ctx.statsRuntime.addSink(new MetricsServiceSink(ctx, spec, node));
}
