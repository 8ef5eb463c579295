import type { Counter, Gauge, Scope } from '../../../../stats/store.js';
import { FLAG } from '../../../access-log/stream-info.js';
import { headerValue } from '../../../codec/request.js';
import { type RuntimeLookup, randomDraw } from '../../runtime-fraction.js';
import { CONTINUE, type FilterStatus, type FilterStream, STOP_ITERATION, type StreamFilter } from '../api.js';
import type { FaultConfig, Fraction } from './config.js';

/** The fault filter's stats, under the connection manager's `http.<stat_prefix>.fault.`. */
export class FaultStats {
  readonly delaysInjected: Counter;
  readonly abortsInjected: Counter;
  readonly faultsOverflow: Counter;
  readonly activeFaults: Gauge;

  constructor(readonly scope: Scope) {
    this.delaysInjected = scope.counter('delays_injected');
    this.abortsInjected = scope.counter('aborts_injected');
    this.faultsOverflow = scope.counter('faults_overflow');
    this.activeFaults = scope.gauge('active_faults');
  }

  /** `<downstream cluster>.<name>`, for a request that says which cluster sent it. */
  byCluster(cluster: string, name: 'delays_injected' | 'aborts_injected'): void {
    this.scope.counter(`${cluster}.${name}`).inc();
  }
}

/** A request header that names a fault, in the reference's spelling or this proxy's. */
function faultHeader(stream: FilterStream, suffix: string): string | undefined {
  return headerValue(stream.req, `x-envoy-${suffix}`) ?? headerValue(stream.req, `x-proxy-${suffix}`);
}

/** A header holding a non-negative integer, or undefined. */
function uintHeader(stream: FilterStream, suffix: string): number | undefined {
  const raw = faultHeader(stream, suffix);
  if (raw === undefined || !/^\d+$/.test(raw.trim())) return undefined;
  return Number(raw.trim());
}

/** A runtime value as a non-negative integer, else `fallback`. */
function runtimeUint(runtime: RuntimeLookup, key: string, fallback: number): number {
  const raw = runtime(key)?.trim();
  return raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : fallback;
}

/**
 * Whether this request falls in the share, as the reference's `featureEnabled`: an integer
 * under the runtime key is a percentage (above 100 always on), else the share applies.
 */
function enabled(share: Fraction, key: string, runtime: RuntimeLookup): boolean {
  const percent = runtimeUint(runtime, key, -1);
  if (percent > 100) return true;
  const f = percent >= 0 ? { numerator: percent, denominator: 100 } : share;
  return randomDraw() % f.denominator < f.numerator;
}

/**
 * The share of a header-controlled fault: the request's `...-percentage` header, never above
 * the configured share (as the reference: a client can only lower it).
 */
function headerShare(stream: FilterStream, suffix: string, configured: Fraction): Fraction {
  const n = uintHeader(stream, suffix);
  return n === undefined
    ? configured
    : { numerator: Math.min(n, configured.numerator), denominator: configured.denominator };
}

/** One request's fault filter: it delays, then aborts, as `envoy.filters.http.fault` does. */
export class FaultFilter implements StreamFilter {
  private timer: NodeJS.Timeout | null = null;
  /** This request counts once in `active_faults`, whether delayed, aborted or both. */
  private active = false;

  constructor(
    private readonly base: FaultConfig,
    private readonly configType: string,
    private readonly stats: FaultStats,
    private readonly runtime: RuntimeLookup,
  ) {}

  decodeHeaders(stream: FilterStream): FilterStatus {
    const config = (stream.perRoute(this.configType) as FaultConfig | undefined) ?? this.base;
    if (config.upstreamCluster !== '' && stream.routeCluster !== config.upstreamCluster) return CONTINUE;
    if (config.downstreamNodes.length > 0) {
      const node = headerValue(stream.req, 'x-envoy-downstream-service-node');
      if (node === undefined || !config.downstreamNodes.includes(node)) return CONTINUE;
    }
    if (!config.headers.every((m) => m(stream.req))) return CONTINUE;
    const cluster = headerValue(stream.req, 'x-envoy-downstream-service-cluster') ?? '';
    const delayMs = this.delayMs(stream, config);
    if (delayMs > 0 && this.tryActivate(config)) {
      this.stats.delaysInjected.inc();
      if (cluster !== '') this.stats.byCluster(cluster, 'delays_injected');
      stream.info.flags |= FLAG.DI;
      this.timer = setTimeout(() => {
        this.timer = null;
        if (stream.ended) return;
        if (!this.maybeAbort(stream, config, cluster)) stream.continueDecoding();
      }, delayMs);
      return STOP_ITERATION;
    }
    return this.maybeAbort(stream, config, cluster) ? STOP_ITERATION : CONTINUE;
  }

  onDestroy(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.active) this.stats.activeFaults.dec();
    this.active = false;
  }

  /** The delay for this request in ms, 0 for none. */
  private delayMs(stream: FilterStream, config: FaultConfig): number {
    const delay = config.delay;
    if (delay === null) return 0;
    const header = delay.ms === 'header';
    const share = header
      ? headerShare(stream, 'fault-delay-request-percentage', delay.percent)
      : delay.percent;
    if (!enabled(share, config.runtime.delayPercent, this.runtime)) return 0;
    const ms = header ? uintHeader(stream, 'fault-delay-request') : delay.ms;
    if (ms === undefined) return 0;
    return runtimeUint(this.runtime, config.runtime.delayDuration, ms as number);
  }

  /** Answers the request with the abort's status when it falls in its share; true when it did. */
  private maybeAbort(stream: FilterStream, config: FaultConfig, cluster: string): boolean {
    const abort = config.abort;
    if (abort === null) return false;
    const header = abort.status === 'header';
    const share = header
      ? headerShare(stream, 'fault-abort-request-percentage', abort.percent)
      : abort.percent;
    if (!enabled(share, config.runtime.abortPercent, this.runtime)) return false;
    const fromHeader = header ? uintHeader(stream, 'fault-abort-request') : undefined;
    if (header && (fromHeader === undefined || fromHeader < 200 || fromHeader >= 600)) return false;
    const status = runtimeUint(
      this.runtime,
      config.runtime.abortStatus,
      (fromHeader ?? abort.status) as number,
    );
    if (!this.tryActivate(config)) return false;
    this.stats.abortsInjected.inc();
    if (cluster !== '') this.stats.byCluster(cluster, 'aborts_injected');
    stream.info.flags |= FLAG.FI;
    stream.info.details = 'fault_filter_abort';
    stream.sendLocalReply(status, 'fault filter abort');
    return true;
  }

  /** Counts this request as a fault unless `max_active_faults` are already active. */
  private tryActivate(config: FaultConfig): boolean {
    if (this.active) return true;
    const max = runtimeUint(
      this.runtime,
      config.runtime.maxActiveFaults,
      config.maxActiveFaults ?? Number.MAX_SAFE_INTEGER,
    );
    if (this.stats.activeFaults.value >= max) {
      this.stats.faultsOverflow.inc();
      return false;
    }
    this.stats.activeFaults.inc();
    this.active = true;
    return true;
  }
}
