import type { ServerResponse } from 'node:http';
import type { State } from '../../reducers/index.js';
import { clusterSettings } from '../../reducers/settings/cluster.js';
import { quantiles } from './bins.js';
import { type StatsStore, sanitizeStatName } from './store.js';

const LATENCY_KEYS = ['0', '25', '50', '75', '90', '95', '99', '99.5', '100'];
const LATENCY_FRACTIONS = LATENCY_KEYS.map((k) => Number(k) / 100);
const COUNTERS = [
  'upstream_rq_2xx',
  'upstream_rq_4xx',
  'upstream_rq_5xx',
  'upstream_rq_timeout',
  'upstream_rq_per_try_timeout',
  'upstream_rq_pending_overflow',
  'upstream_rq_retry',
] as const;
type Sample = Record<(typeof COUNTERS)[number], number>;

/**
 * The hystrix dashboard stream: after every stats flush, one `HystrixCommand` and one
 * `HystrixThreadPool` record per cluster, counts rolled over the last `num_buckets`
 * flushes. Adaptations (the spec's): thread-pool rejections are `upstream_rq_pending_overflow`,
 * the circuit breaker is reported forced closed, short-circuited is 0, latency covers the
 * last flush interval only and the mean is unavailable (reported as 0).
 */
export class HystrixStream {
  private readonly clients = new Set<ServerResponse>();
  /** Per cluster stat name: absolute counter values at the last `buckets + 1` flushes. */
  private readonly windows = new Map<string, Sample[]>();

  constructor(
    private readonly state: () => State,
    private readonly flushIntervalMs: number,
    /** The sink's `num_buckets`: the flushes its rolling window counts. */
    private readonly buckets: number,
  ) {}

  /** Takes over `res` as an event stream until the client goes away. */
  attach(res: ServerResponse): void {
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'access-control-allow-origin': '*',
    });
    // a comment line at once, so clients see the stream open before the first flush
    res.write(':\n\n');
    this.clients.add(res);
    res.on('close', () => this.clients.delete(res));
  }

  /** Ends every open stream (shutdown). */
  close(): void {
    for (const res of this.clients) res.end();
    this.clients.clear();
  }

  /**
   * Called after each flush with the stats of every thread (merged over the workers): rolls
   * the windows and writes one batch to every client.
   */
  onFlush(stats: StatsStore): void {
    const now = Date.now();
    const records: string[] = [];
    const seen = new Set<string>();
    for (const entry of Object.values(this.state().clusters)) {
      const settings = clusterSettings(entry.config);
      const statName = sanitizeStatName(settings.statName);
      seen.add(statName);
      // The breakers' own limit, as the pools apply it.
      records.push(...this.clusterRecords(stats, statName, settings.thresholds.DEFAULT.maxRequests, now));
    }
    for (const name of this.windows.keys()) if (!seen.has(name)) this.windows.delete(name);
    if (this.clients.size === 0) return;
    const body = records.map((r) => `data: ${r}\n\n`).join('') || ':\n\n';
    for (const res of this.clients) res.write(body);
  }

  private clusterRecords(stats: StatsStore, statName: string, maxRequests: number, now: number): string[] {
    const prefix = `cluster.${statName}.`;
    const sample = {} as Sample;
    for (const c of COUNTERS) sample[c] = stats.counters.get(prefix + c)?.value ?? 0;
    let window = this.windows.get(statName);
    if (!window) {
      window = [];
      this.windows.set(statName, window);
    }
    window.push(sample);
    if (window.length > this.buckets + 1) window.shift();
    const first = window[0]!;
    const rolling = (c: (typeof COUNTERS)[number]): number => sample[c] - first[c];
    const success = rolling('upstream_rq_2xx');
    const errors = rolling('upstream_rq_5xx');
    const timeouts = rolling('upstream_rq_timeout') + rolling('upstream_rq_per_try_timeout');
    const rejected = rolling('upstream_rq_pending_overflow');
    const total = success + errors + timeouts + rejected + rolling('upstream_rq_4xx');
    const errorPercentage = total > 0 ? Math.round(((errors + timeouts + rejected) * 100) / total) : 0;
    const rqTime = stats.histograms.get(`${prefix}upstream_rq_time`);
    const q = quantiles(rqTime?.interval?.bins ?? null, LATENCY_FRACTIONS);
    const latency: Record<string, number> = {};
    LATENCY_KEYS.forEach((k, i) => {
      latency[k] = Number.isNaN(q[i]!) ? 0 : q[i]!;
    });
    const active = stats.gauges.get(`${prefix}upstream_rq_active`)?.value ?? 0;
    const windowMs = this.buckets * this.flushIntervalMs;
    const command = {
      type: 'HystrixCommand',
      name: statName,
      group: statName,
      currentTime: now,
      isCircuitBreakerOpen: false,
      errorPercentage,
      errorCount: errors,
      requestCount: total,
      rollingCountCollapsedRequests: 0,
      rollingCountExceptionsThrown: 0,
      rollingCountFailure: errors,
      rollingCountFallbackFailure: 0,
      rollingCountFallbackRejection: 0,
      rollingCountFallbackSuccess: 0,
      rollingCountResponsesFromCache: 0,
      rollingCountSemaphoreRejected: rejected,
      rollingCountShortCircuited: 0,
      rollingCountSuccess: success,
      rollingCountThreadPoolRejected: 0,
      rollingCountTimeout: timeouts,
      rollingCountBadRequests: 0,
      currentConcurrentExecutionCount: active,
      latencyExecute_mean: 0,
      latencyExecute: latency,
      latencyTotal_mean: 0,
      latencyTotal: latency,
      propertyValue_circuitBreakerRequestVolumeThreshold: 0,
      propertyValue_circuitBreakerSleepWindowInMilliseconds: 0,
      propertyValue_circuitBreakerErrorThresholdPercentage: 0,
      propertyValue_circuitBreakerForceOpen: false,
      propertyValue_circuitBreakerForceClosed: true,
      propertyValue_circuitBreakerEnabled: true,
      propertyValue_executionIsolationStrategy: 'SEMAPHORE',
      propertyValue_executionIsolationThreadTimeoutInMilliseconds: 0,
      propertyValue_executionIsolationThreadInterruptOnTimeout: false,
      propertyValue_executionIsolationSemaphoreMaxConcurrentRequests: maxRequests,
      propertyValue_fallbackIsolationSemaphoreMaxConcurrentRequests: 0,
      propertyValue_requestCacheEnabled: false,
      propertyValue_requestLogEnabled: true,
      reportingHosts: 1,
      propertyValue_metricsRollingStatisticalWindowInMilliseconds: windowMs,
    };
    const pool = {
      type: 'HystrixThreadPool',
      name: statName,
      currentTime: now,
      currentActiveCount: active,
      currentCompletedTaskCount: 0,
      currentCorePoolSize: maxRequests,
      currentLargestPoolSize: 0,
      currentMaximumPoolSize: maxRequests,
      currentPoolSize: maxRequests,
      currentQueueSize: stats.gauges.get(`${prefix}upstream_rq_pending_active`)?.value ?? 0,
      currentTaskCount: 0,
      rollingCountThreadsExecuted: 0,
      rollingMaxActiveThreads: 0,
      rollingCountCommandRejections: rejected,
      reportingHosts: 1,
      propertyValue_queueSizeRejectionThreshold: 0,
      propertyValue_metricsRollingStatisticalWindowInMilliseconds: windowMs,
    };
    return [JSON.stringify(command), JSON.stringify(pool)];
  }
}
