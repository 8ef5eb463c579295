/**
 * The Zipkin reporter: an effect owned by one connection manager in one process (each data-
 * plane worker reports the spans of its own requests, as each reference worker thread does).
 * Spans are buffered and POSTed as one JSON v2 list to `collector_endpoint` on a host of
 * `collector_cluster`, through this build's own upstream pools, so the collector cluster's
 * stats and breakers count the reports like any request. A batch goes when
 * `tracing.zipkin.min_flush_spans` (5) spans wait, on a timer of
 * `tracing.zipkin.flush_interval_ms` (5000 ms), and when the connection manager closes.
 */

import type { Counters, Scope } from '../../stats/store.js';
import type { RuntimeLookup } from '../http/runtime-fraction.js';
import type { ClusterLookup } from '../http/types.js';
import type { ClusterTraffic, RequestCount } from '../pool/cluster-traffic.js';
import { poolFor } from '../pool/index.js';
import type { PoolContext, UpstreamHandler, UpstreamRequest } from '../pool/types.js';
import type { ZipkinSpec } from './config.js';
import { type ZipkinSpanJson, zipkinV1 } from './span.js';
import { runtimeInt, SpanBatch } from './span-batch.js';

/** The `tracing.zipkin.*` counters, shared by name by every reporter of the process. */
const REPORTER_COUNTERS = {
  spansSent: 'spans_sent',
  reportsSent: 'reports_sent',
  reportsDropped: 'reports_dropped',
  reportsFailed: 'reports_failed',
  reportsSkippedNoCluster: 'reports_skipped_no_cluster',
  timerFlushed: 'timer_flushed',
};
type ReporterStats = Counters<typeof REPORTER_COUNTERS>;

export class ZipkinReporter {
  private readonly batch: SpanBatch<ZipkinSpanJson>;
  private readonly stats: ReporterStats;

  constructor(
    private readonly spec: ZipkinSpec,
    private readonly clusters: ClusterLookup,
    stats: { scope(prefix: string): Scope },
    private readonly runtime: RuntimeLookup,
  ) {
    this.stats = stats.scope('tracing.zipkin').counters(REPORTER_COUNTERS);
    this.batch = new SpanBatch(
      runtime,
      'tracing.zipkin',
      (spans) => {
        this.stats.spansSent.add(spans.length);
        const body = this.spec.encoding === 'json-v1' ? spans.map(zipkinV1) : spans;
        return this.post(Buffer.from(JSON.stringify(body)));
      },
      () => this.stats.timerFlushed.inc(),
    );
  }

  report(span: ZipkinSpanJson): void {
    this.batch.add(span);
  }

  /** Stops the timer, sends what waits and waits (at most the request timeout) for every report in flight. */
  close(): Promise<void> {
    return this.batch.close();
  }

  /** One report; resolves when it is answered, failed or timed out (never rejects). */
  private post(body: Buffer): Promise<void> {
    const cluster = this.clusters.get(this.spec.collectorCluster);
    if (!cluster) {
      this.stats.reportsSkippedNoCluster.inc();
      return Promise.resolve();
    }
    const traffic = cluster.traffic as ClusterTraffic;
    const host = cluster.lb.choose({ hash: null, attempt: 0, criteria: null, originalDst: null });
    if (!host || !traffic.admitRequest()) {
      this.stats.reportsFailed.inc();
      return Promise.resolve();
    }
    const pc: PoolContext = { cluster, host, traffic, connector: traffic.connector };
    const count = traffic.beginRequest(host);
    const timeoutMs = runtimeInt(this.runtime, 'tracing.zipkin.request_timeout', 5000);
    return new Promise((resolve) => {
      const report = new SpanPost(body, count, this.stats, resolve);
      report.upstream = poolFor(pc, false).request(
        {
          method: 'POST',
          path: this.spec.collectorEndpoint,
          // As the reference: the collector cluster's name is the Host.
          authority: this.spec.collectorCluster,
          headers: ['content-type', 'application/json'],
          contentLength: body.length,
          hasBody: true,
        },
        report,
        pc,
      );
      report.arm(timeoutMs);
    });
  }
}

/** One POST of a batch as the pool's handler: 202 counts as sent, another status as dropped. */
class SpanPost implements UpstreamHandler {
  upstream: UpstreamRequest | null = null;
  private status = 0;
  private done = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly body: Buffer,
    private readonly count: RequestCount,
    private readonly stats: ReporterStats,
    private readonly resolve: () => void,
  ) {}

  arm(ms: number): void {
    if (this.done) return;
    this.timer = setTimeout(() => {
      this.upstream?.abort();
      this.end(false);
    }, ms);
  }

  private end(answered: boolean): void {
    if (this.done) return;
    this.done = true;
    if (this.timer) clearTimeout(this.timer);
    this.count.end(this.status);
    if (!answered) this.stats.reportsFailed.inc();
    else if (this.status === 202) this.stats.reportsSent.inc();
    else this.stats.reportsDropped.inc();
    this.resolve();
  }

  onUpstreamReady(up: UpstreamRequest): void {
    this.upstream = up;
    up.write(this.body);
    up.end();
  }
  onUpstreamFailure(): void {
    this.end(false);
  }
  onUpstreamHead(status: number): void {
    this.status = status;
  }
  onUpstreamData(): void {}
  onUpstreamEnd(): void {
    this.end(true);
  }
  onUpstreamReset(): void {
    this.end(false);
  }
}
