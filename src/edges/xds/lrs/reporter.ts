/**
 * The load reporting client (LRS): an edge of the primary that keeps one
 * `LoadReportingService.StreamLoadStats` stream to the server of
 * `cluster_manager.load_stats_config`, as the reference's `LoadStatsReporter`. It sends its
 * node, reads which clusters to report and how often (`LoadStatsResponse`), then sends each
 * interval what those clusters' hosts did since the last report. The counts are the ones
 * `/clusters` shows (`ctx.figures`): in-process the cluster manager's hosts, with workers
 * every worker's figures summed.
 */
import type * as Grpc from '@grpc/grpc-js';
import type bunyan from 'bunyan';
import { entryOf } from '../../../../reducers/names.js';
import type { ClustersFigures } from '../../../../views/clusters/figures.js';
import type { ApiVersion, GrpcSource } from '../../../config/config-source.js';
import { loadStatsSourceOf } from '../../../config/load-reporting.js';
import type { Store } from '../../../control/store.js';
import type { DataPlaneFigures } from '../../../dataplane/figures.js';
import type { Loggers } from '../../../logging/loggers.js';
import type { Options } from '../../../options.js';
import type { Counter, StatsStore } from '../../../stats/store.js';
import { channelCredentials, channelOptions, grpc } from '../grpc-channel.js';
import { backoffMs, endCall, grpcTarget, streamMetadata, unrefTimeout } from '../grpc-stream.js';
import { managementSecurity } from '../management-tls.js';
import { decodeMessage, encodeMessage, localNode, nodeMessage } from '../wire.js';
import { type ClusterStats, LoadLedger } from './ledger.js';

const METHOD: Record<ApiVersion, string> = {
  V2: '/envoy.service.load_stats.v2.LoadReportingService/StreamLoadStats',
  V3: '/envoy.service.load_stats.v3.LoadReportingService/StreamLoadStats',
};
// The v3 messages have the v2 ones' field numbers, so the v2 messages carry both versions.
const REQUEST = 'envoy.service.load_stats.v2.LoadStatsRequest';
const RESPONSE = 'envoy.service.load_stats.v2.LoadStatsResponse';
/** The client feature that tells the server `send_all_clusters` is honoured. */
const SEND_ALL_CLUSTERS = 'envoy.lrs.supports_send_all_clusters';

interface LoadStatsRequest {
  node: Record<string, unknown>;
  cluster_stats: ClusterStats[];
}

interface LoadStatsResponse {
  clusters: string[];
  send_all_clusters: boolean;
  load_reporting_interval: { seconds: number; nanos: number } | null;
  report_endpoint_granularity: boolean;
}

type Call = Grpc.ClientDuplexStream<LoadStatsRequest, LoadStatsResponse>;

/** The part of the server context load reporting runs on. */
export interface LoadReportingContext {
  readonly options: Options;
  readonly store: Store;
  readonly stats: StatsStore;
  readonly log: Loggers;
  readonly figures: DataPlaneFigures;
  onShutdown(step: () => Promise<void> | void): void;
}

/**
 * Starts reporting load when the bootstrap has `cluster_manager.load_stats_config` (stopped
 * at shutdown); null when it has none.
 */
export function startLoadReporting(ctx: LoadReportingContext): LoadReporter | null {
  const bootstrap = ctx.store.state.bootstrap?.config ?? {};
  const source = loadStatsSourceOf(bootstrap);
  if (!source) return null;
  const node = localNode(bootstrap, ctx.options);
  const features = Array.isArray(node.client_features) ? node.client_features : [];
  const reporter = new LoadReporter(ctx, source, {
    ...nodeMessage(node),
    client_features: [...features, SEND_ALL_CLUSTERS],
  });
  ctx.onShutdown(() => reporter.close());
  reporter.connect();
  return reporter;
}

/**
 * One LRS stream and its report timer. As in the reference, every request carries the node;
 * the last response keeps applying across a reconnect until a new one comes; a new response replaces the cluster list and the interval, and a cluster it
 * keeps keeps its period. Its counters (`cluster_manager.load_reporter.*`) are named as the
 * reference's: `requests` counts the server's requests for load (responses received),
 * `responses` the reports sent, `errors` the streams that broke or could not be opened.
 */
export class LoadReporter {
  private readonly ledger = new LoadLedger();
  private readonly requests: Counter;
  private readonly responses: Counter;
  private readonly errors: Counter;
  private readonly log: bunyan;
  private client: Grpc.Client | null = null;
  private call: Call | null = null;
  private assignment: LoadStatsResponse | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private reportTimer: NodeJS.Timeout | null = null;
  private failures = 0;
  private closed = false;
  /** Which member of the cluster to dial next. */
  private pick = 0;

  constructor(
    private readonly ctx: LoadReportingContext,
    private readonly source: GrpcSource,
    private readonly node: Record<string, unknown>,
  ) {
    this.log = ctx.log.get('upstream');
    const scope = ctx.stats.scope('cluster_manager.load_reporter');
    this.requests = scope.counter('requests');
    this.responses = scope.counter('responses');
    this.errors = scope.counter('errors');
  }

  /** Opens the stream to the next member of the server's cluster and says who this is. */
  connect(): void {
    if (this.closed) return;
    const target = this.target();
    if (!target) {
      this.fail('the load reporting cluster has no member');
      return;
    }
    const security = managementSecurity(this.ctx.store.state, this.ctx.stats, this.source.cluster);
    if ('error' in security) {
      this.fail(security.error);
      return;
    }
    const { Client } = grpc();
    const client = new Client(target, channelCredentials(security.tls), channelOptions(security.keepalive));
    const call: Call = client.makeBidiStreamRequest(
      METHOD[this.source.transport],
      (r: LoadStatsRequest) => encodeMessage(REQUEST, r),
      (b: Buffer) => decodeMessage<LoadStatsResponse>(RESPONSE, b),
      streamMetadata(this.source.metadata),
    );
    this.client = client;
    this.call = call;
    call.on('data', (response: LoadStatsResponse) => this.onResponse(call, response));
    call.on('error', (err: Grpc.ServiceError) => this.onEnd(call, `${err.code}: ${err.details}`));
    call.on('end', () => this.onEnd(call, 'stream ended by the server'));
    // A redial reports at once what its clusters did since their last report (the outage
    // too), as the reference's first message of a new stream does; a first dial has nothing.
    if (this.assignment) this.guard(call, this.report(call));
    else this.send(call, []);
  }

  close(): void {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.hangUp();
  }

  private target(): string | null {
    const hosts = entryOf(this.ctx.store.state.clusters, this.source.cluster)?.hosts ?? [];
    if (hosts.length === 0) return null;
    return grpcTarget(hosts[this.pick++ % hosts.length]!);
  }

  private onResponse(call: Call, response: LoadStatsResponse): void {
    if (call !== this.call) return;
    this.failures = 0;
    this.requests.inc();
    this.assignment = response;
    this.log.debug(
      { clusters: response.send_all_clusters ? '*' : response.clusters },
      'new load report epoch',
    );
    this.guard(call, this.startPeriod(call));
  }

  /**
   * Starts tracking the clusters of the last response (a cluster new to it counts from now)
   * and arms the next report.
   */
  private async startPeriod(call: Call, read?: ClustersFigures): Promise<void> {
    const assignment = this.assignment;
    if (!assignment) return;
    const counts = read ?? (await this.ctx.figures.read());
    if (call !== this.call) return;
    const clusters = this.ctx.store.state.clusters;
    const names = assignment.send_all_clusters ? Object.keys(clusters) : assignment.clusters;
    this.ledger.track(names, clusters, (c, a) => counts.hostStats(c, a), performance.now());
    if (this.reportTimer) clearTimeout(this.reportTimer);
    const interval = assignment.load_reporting_interval;
    const ms = interval ? interval.seconds * 1000 + interval.nanos / 1e6 : 0;
    this.reportTimer = setTimeout(() => this.guard(call, this.report(call)), ms);
    this.reportTimer.unref();
  }

  private async report(call: Call): Promise<void> {
    this.reportTimer = null;
    const counts = await this.ctx.figures.read();
    if (call !== this.call || !this.assignment) return;
    const stats = this.ledger.report(
      this.ctx.store.state.clusters,
      (c, a) => counts.hostStats(c, a),
      performance.now(),
      this.assignment.report_endpoint_granularity,
    );
    this.send(call, stats);
    // With send_all_clusters, a cluster added since is tracked from now on (from these counts).
    await this.startPeriod(call, counts);
  }

  /** A period or report that failed (figures unreadable, a report that does not encode) ends the stream, to be redialled. */
  private guard(call: Call, work: Promise<void>): void {
    work.catch((err: Error) => this.onEnd(call, `load report failed: ${err.message}`));
  }

  private send(call: Call, clusterStats: ClusterStats[]): void {
    call.write({ node: this.node, cluster_stats: clusterStats });
    this.responses.inc();
  }

  private onEnd(call: Call, why: string): void {
    if (call !== this.call) return;
    this.hangUp();
    this.fail(why);
  }

  private fail(why: string): void {
    this.errors.inc();
    this.failures++;
    const delay = backoffMs(this.failures);
    this.log.warn({ cluster: this.source.cluster, retryInMs: delay }, `load reporting stream closed: ${why}`);
    if (this.closed || this.retryTimer) return;
    this.retryTimer = unrefTimeout(delay, () => {
      this.retryTimer = null;
      this.connect();
    });
  }

  private hangUp(): void {
    if (this.reportTimer) clearTimeout(this.reportTimer);
    this.reportTimer = null;
    endCall(this.call, this.client);
    this.call = null;
    this.client = null;
  }
}
