import type { JsonObject } from '../../../events/index.js';
import type { HealthCheckSettings } from '../../config/health.js';
import type { Counter } from '../../stats/store.js';
import type { CheckResult, Probe } from './probe.js';

/** `cluster.<name>.health_check.*` counters a session bumps. */
export interface HealthCheckCounters {
  attempt: Counter;
  success: Counter;
  failure: Counter;
  networkFailure: Counter;
  passiveFailure: Counter;
}

/** What a session needs from its checker: traffic knowledge, randomness, counters, and where verdicts go. */
export interface SessionEnv {
  /** Whether the cluster has carried traffic (else checks run at `no_traffic_interval`). */
  hadTraffic(): boolean;
  /** A random non-negative integer. */
  random(): number;
  /** The runtime's `health_check.min_interval` and `health_check.max_interval` (ms), when set. */
  intervalBounds(): { min: number; max: number };
  counters: HealthCheckCounters;
  /** The verdict changed: healthy or not, or degraded or not (read `isHealthy`, `isDegraded`). */
  onChange(): void;
  /** A check finished, with its result (the first one ends the host's warming). */
  onChecked(result: CheckResult): void;
  /** The event of a health check event log line (the reference's `HealthCheckEvent` oneof), when logging. */
  log?: (event: JsonObject) => void;
}

/** How a check moved the verdict: not at all, toward a change (threshold not reached), or changed. */
type Transition = 'unchanged' | 'pending' | 'changed';

/**
 * The reference's `ActiveHealthCheckSession` for one checker and one host: the first check
 * at once (after `initial_jitter`), then one per interval chosen by the result and the
 * transition. A success on an unhealthy host counts toward `healthy_threshold` (the first
 * check of a session marks it healthy at once); an answered failure takes a healthy host
 * out at once, a network failure or timeout counts toward `unhealthy_threshold`.
 */
export class HealthSession {
  private firstCheck = true;
  private degraded = false;
  private numHealthy = 0;
  private numUnhealthy = 0;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  /** Bumped per check, so a result arriving after its timeout is ignored. */
  private generation = 0;

  constructor(
    private readonly settings: HealthCheckSettings,
    private readonly probe: Probe,
    private healthy: boolean,
    private readonly env: SessionEnv,
  ) {}

  get isHealthy(): boolean {
    return this.healthy;
  }

  /** The last pass came with `x-proxy-degraded`. */
  get isDegraded(): boolean {
    return this.degraded;
  }

  start(): void {
    const jitter = this.settings.initialJitterMs;
    this.schedule(jitter > 0 ? this.env.random() % jitter : 0);
  }

  stop(): void {
    this.stopped = true;
    this.generation++;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.probe.close();
  }

  /**
   * The reference's passive failure: an answer through the data plane asked to fail this host
   * at once (`x-proxy-immediate-health-check-fail`). Checks go on at their pace; passes bring
   * the host back after `healthy_threshold`.
   */
  failPassively(): void {
    if (this.stopped) return;
    this.numHealthy = 0;
    this.env.counters.failure.inc();
    this.env.counters.passiveFailure.inc();
    if (!this.healthy) return;
    this.healthy = false;
    this.numUnhealthy = 0;
    this.env.onChange();
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => this.run(), ms);
    this.timer.unref();
  }

  private run(): void {
    this.timer = null;
    const generation = ++this.generation;
    this.env.counters.attempt.inc();
    const timeout = setTimeout(() => {
      if (generation !== this.generation) return;
      this.generation++;
      // The reference closes the connection on a timeout and counts a network failure.
      this.probe.close();
      this.finish('network');
    }, this.settings.timeoutMs);
    timeout.unref();
    this.probe.check().then(
      (result) => {
        if (generation !== this.generation) return;
        clearTimeout(timeout);
        this.finish(result);
      },
      () => {
        if (generation !== this.generation) return;
        clearTimeout(timeout);
        this.finish('network');
      },
    );
  }

  private finish(result: CheckResult): void {
    if (this.stopped) return;
    const passed = result === 'success' || result === 'degraded';
    let transition = passed ? this.onSuccess() : this.onFailure(result);
    const log = this.env.log;
    if (log) {
      const failure_type = result === 'active' ? 'ACTIVE' : 'NETWORK';
      if (transition === 'changed')
        log(
          this.healthy
            ? { add_healthy_event: { first_check: this.firstCheck } }
            : { eject_unhealthy_event: { failure_type } },
        );
      if (!passed && (this.firstCheck || this.settings.alwaysLogFailures))
        log({ health_check_failure_event: { failure_type, first_check: this.firstCheck } });
    }
    // A pass says whether the host is degraded; a failure leaves that as it was.
    if (passed && (result === 'degraded') !== this.degraded) {
      this.degraded = result === 'degraded';
      log?.(this.degraded ? { degraded_healthy_host: {} } : { no_longer_degraded_host: {} });
      if (transition === 'unchanged') transition = 'changed';
    }
    this.firstCheck = false;
    if (transition === 'changed') this.env.onChange();
    this.env.onChecked(result);
    this.schedule(this.nextInterval(passed, transition));
  }

  private onSuccess(): Transition {
    this.numUnhealthy = 0;
    this.env.counters.success.inc();
    if (this.healthy) return 'unchanged';
    // The reference marks a host healthy on its first check ever, to start faster.
    if (this.firstCheck || ++this.numHealthy === this.settings.healthyThreshold) {
      this.healthy = true;
      this.numHealthy = 0;
      return 'changed';
    }
    return 'pending';
  }

  private onFailure(result: CheckResult): Transition {
    this.numHealthy = 0;
    this.env.counters.failure.inc();
    if (result === 'network') this.env.counters.networkFailure.inc();
    if (!this.healthy) return 'unchanged';
    if (result !== 'network' || ++this.numUnhealthy === this.settings.unhealthyThreshold) {
      this.healthy = false;
      this.numUnhealthy = 0;
      return 'changed';
    }
    return 'pending';
  }

  /** The reference's `interval()`: the edge intervals while a change is pending, jitter added. */
  private nextInterval(succeeded: boolean, transition: Transition): number {
    const s = this.settings;
    let base: number;
    if (!this.env.hadTraffic()) base = this.healthy ? s.noTrafficHealthyIntervalMs : s.noTrafficIntervalMs;
    else if (succeeded) base = transition === 'pending' ? s.healthyEdgeIntervalMs : s.intervalMs;
    else base = transition === 'pending' ? s.unhealthyEdgeIntervalMs : s.unhealthyIntervalMs;
    const percentJitter = Math.floor((s.intervalJitterPercent * base) / 100);
    let ms = base;
    if (percentJitter > 0) ms += this.env.random() % percentJitter;
    if (s.intervalJitterMs > 0) ms += this.env.random() % s.intervalJitterMs;
    // The runtime clamps every wait, and a wait of 0 would spin; setTimeout takes at most 2^31-1 ms.
    const { min, max } = this.env.intervalBounds();
    return Math.min(Math.max(1, min, Math.min(Math.floor(ms), max)), 2_147_483_647);
  }
}
