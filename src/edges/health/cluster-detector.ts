import { type JsonObject, outlierChanged } from '../../../events/index.js';
import type { ClusterEntry, HostState } from '../../../reducers/index.js';
import { runtimeValue } from '../../../reducers/runtime.js';
import { clusterStatName } from '../../../reducers/settings/cluster.js';
import type { OutlierFigures } from '../../../views/clusters/figures.js';
import type { OutlierSettings } from '../../config/health.js';
import type { HealthDeps } from './check-context.js';
import {
  type EjectionType,
  ENFORCING,
  type HostMonitor,
  LOGGED_TYPE,
  OutlierStats,
  RUNTIME_KEY,
} from './ejections.js';
import type { JsonLinesLog } from './event-log.js';

const NOT_COMPUTED: OutlierFigures = {
  successRateAverage: -1,
  successRateEjectionThreshold: -1,
  localOriginSuccessRateAverage: -1,
  localOriginSuccessRateEjectionThreshold: -1,
};

/**
 * The reference's outlier `DetectorImpl` for one cluster. Consecutive-error ejections happen
 * as the outcome arrives; every `interval` ejected hosts whose time (`base_ejection_time`
 * times their ejection count) is served come back, and success-rate and failure-percentage
 * ejections are computed over the interval's requests. Every setting is read through its
 * runtime key first.
 */
export class ClusterDetector {
  readonly monitors = new Map<string, HostMonitor>();
  figures: OutlierFigures = NOT_COMPUTED;
  private ejectionsActive = 0;
  /** The members array last followed: an unchanged one needs no walk. */
  private members: readonly HostState[] | null = null;
  private timer: NodeJS.Timeout | null = null;
  private readonly stats: OutlierStats;

  constructor(
    private readonly name: string,
    readonly config: ClusterEntry['config'],
    private readonly settings: OutlierSettings,
    private readonly deps: HealthDeps,
    private readonly now: () => number,
    private readonly eventLog: JsonLinesLog | null,
  ) {
    this.stats = new OutlierStats(deps.stats.scope(`cluster.${clusterStatName(config)}.outlier_detection`));
    this.arm();
  }

  /** A setting, overridden by its runtime key when that holds a non-negative integer. */
  private param(field: keyof OutlierSettings): number {
    const key = RUNTIME_KEY.get(field);
    const raw = key === undefined ? undefined : runtimeValue(this.deps.store.state, key)?.trim();
    if (raw !== undefined && /^\d+$/.test(raw)) return Number(raw);
    return this.settings[field] as number;
  }

  /** Follows the members: new ones get a monitor (an ejected one keeps its flag), gone ones lose it. */
  syncHosts(hosts: readonly HostState[]): void {
    if (hosts === this.members) return;
    this.members = hosts;
    const present = new Set<string>();
    for (const host of hosts) {
      present.add(host.address);
      if (this.monitors.has(host.address)) continue;
      this.monitors.set(host.address, {
        address: host.address,
        // A detector rebuilt by a config change adopts the ejections of the one it replaces.
        ejected: host.failedOutlierCheck,
        numEjections: host.failedOutlierCheck ? 1 : 0,
        lastEjectionAt: this.now(),
        lastActionAt: null,
        lastType: 'consecutive_5xx',
        consecutive5xx: 0,
        consecutiveGatewayFailure: 0,
        consecutiveLocalOriginFailure: 0,
        external: { total: 0, success: 0 },
        local: { total: 0, success: 0 },
        successRate: -1,
        localOriginSuccessRate: -1,
      });
      if (host.failedOutlierCheck) this.ejectionsActive++;
    }
    for (const [address, monitor] of this.monitors) {
      if (present.has(address)) continue;
      if (monitor.ejected) this.ejectionsActive--;
      this.monitors.delete(address);
    }
    this.stats.active.set(this.ejectionsActive);
  }

  /**
   * One outcome of a request to `address`: an HTTP status, or 0 when no response came
   * (connect failure, reset, timeout). Without `split_external_local_origin_errors` that
   * counts as a 503, as the reference maps its local-origin failures to gateway errors.
   */
  put(address: string, status: number): void {
    const m = this.monitors.get(address);
    if (!m) return;
    if (!this.settings.splitExternalLocalOriginErrors) {
      this.putHttpStatus(m, status === 0 ? 503 : status);
      return;
    }
    m.local.total++;
    if (status === 0) {
      if (++m.consecutiveLocalOriginFailure === this.param('consecutiveLocalOriginFailure'))
        this.onConsecutive(m, 'consecutive_local_origin_failure');
      return;
    }
    m.local.success++;
    m.consecutiveLocalOriginFailure = 0;
    this.putHttpStatus(m, status);
  }

  private putHttpStatus(m: HostMonitor, status: number): void {
    m.external.total++;
    if (status < 500) {
      m.external.success++;
      m.consecutive5xx = 0;
      m.consecutiveGatewayFailure = 0;
      return;
    }
    if (status === 502 || status === 503 || status === 504) {
      if (++m.consecutiveGatewayFailure === this.param('consecutiveGatewayFailure'))
        this.onConsecutive(m, 'consecutive_gateway_failure');
    } else m.consecutiveGatewayFailure = 0;
    if (++m.consecutive5xx === this.param('consecutive5xx')) this.onConsecutive(m, 'consecutive_5xx');
  }

  private onConsecutive(m: HostMonitor, type: EjectionType): void {
    if (m.ejected) return;
    // Reset so that another bout is detected even without a success in between.
    if (type === 'consecutive_5xx') m.consecutive5xx = 0;
    else if (type === 'consecutive_gateway_failure') m.consecutiveGatewayFailure = 0;
    else m.consecutiveLocalOriginFailure = 0;
    this.stats.detected.get(type)?.inc();
    this.eject(m, type);
  }

  /**
   * Ejects when `max_ejection_percent` allows (one host always may) and the `enforcing_*` draw
   * says so; `detail` is the log's event of this type.
   */
  private eject(
    m: HostMonitor,
    type: EjectionType,
    detail: JsonObject = { eject_consecutive_event: {} },
  ): void {
    const max = Math.min(100, this.param('maxEjectionPercent'));
    const ejectedPercent = (100 * this.ejectionsActive) / this.monitors.size;
    if (ejectedPercent >= max && this.ejectionsActive > 0) {
      this.stats.overflow.inc();
      return;
    }
    if (Math.random() * 100 >= this.param(ENFORCING[type])) {
      this.logAction(m, type, 'EJECT', false, detail);
      return;
    }
    this.logAction(m, type, 'EJECT', true, detail, m.numEjections + 1);
    this.ejectionsActive++;
    this.stats.active.set(this.ejectionsActive);
    this.stats.enforcedTotal.inc();
    this.stats.enforced.get(type)?.inc();
    m.ejected = true;
    m.numEjections++;
    m.lastEjectionAt = this.now();
    this.deps.store.dispatch(
      outlierChanged({ cluster: this.name, address: m.address, ejected: true, reason: type }),
      'outlier',
    );
  }

  /** One line of the event log, when there is one; the action time counts either way. */
  private logAction(
    m: HostMonitor,
    type: EjectionType,
    action: 'EJECT' | 'UNEJECT',
    enforced: boolean,
    detail: JsonObject,
    numEjections = m.numEjections,
  ): void {
    const now = this.now();
    const since = m.lastActionAt;
    m.lastActionAt = now;
    m.lastType = type;
    this.eventLog?.write({
      type: LOGGED_TYPE[type],
      timestamp: new Date(now).toISOString(),
      ...(since === null ? {} : { secs_since_last_action: String(Math.floor((now - since) / 1000)) }),
      cluster_name: this.name,
      upstream_url: m.address,
      action,
      num_ejections: numEjections,
      enforced,
      ...detail,
    });
  }

  private arm(): void {
    this.timer = setTimeout(() => this.onInterval(), Math.max(1, this.param('intervalMs')));
    this.timer.unref();
  }

  private onInterval(): void {
    const now = this.now();
    const base = this.param('baseEjectionTimeMs');
    for (const m of this.monitors.values()) {
      if (m.ejected && base * m.numEjections <= now - m.lastEjectionAt) {
        m.ejected = false;
        this.ejectionsActive--;
        m.consecutive5xx = 0;
        m.consecutiveGatewayFailure = 0;
        m.consecutiveLocalOriginFailure = 0;
        this.logAction(m, m.lastType, 'UNEJECT', true, {});
        this.deps.store.dispatch(
          outlierChanged({
            cluster: this.name,
            address: m.address,
            ejected: false,
            reason: 'ejection time elapsed',
          }),
          'outlier',
        );
      }
      m.successRate = -1;
      m.localOriginSuccessRate = -1;
    }
    this.stats.active.set(this.ejectionsActive);
    const external = this.processRates('external');
    const local: [number, number] = this.settings.splitExternalLocalOriginErrors
      ? this.processRates('local')
      : [-1, -1];
    this.figures = {
      successRateAverage: external[0],
      successRateEjectionThreshold: external[1],
      localOriginSuccessRateAverage: local[0],
      localOriginSuccessRateEjectionThreshold: local[1],
    };
    for (const m of this.monitors.values()) {
      m.external = { total: 0, success: 0 };
      m.local = { total: 0, success: 0 };
    }
    this.arm();
  }

  /**
   * Success-rate and failure-percentage ejections over the interval's requests of one
   * origin; returns the success-rate average and ejection threshold (-1 each without enough data).
   */
  private processRates(origin: 'external' | 'local'): [number, number] {
    const srMinHosts = this.param('successRateMinimumHosts');
    const srVolume = this.param('successRateRequestVolume');
    const fpMinHosts = this.param('failurePercentageMinimumHosts');
    const fpVolume = this.param('failurePercentageRequestVolume');
    if (this.monitors.size < srMinHosts && this.monitors.size < fpMinHosts) return [-1, -1];
    const srHosts: Array<[HostMonitor, number]> = [];
    const fpHosts: Array<[HostMonitor, number]> = [];
    for (const m of this.monitors.values()) {
      if (m.ejected) continue;
      const bucket = origin === 'external' ? m.external : m.local;
      if (bucket.total === 0) continue;
      const rate = (100 * bucket.success) / bucket.total;
      if (bucket.total >= Math.min(srVolume, fpVolume)) {
        if (origin === 'external') m.successRate = rate;
        else m.localOriginSuccessRate = rate;
      }
      if (bucket.total >= srVolume) srHosts.push([m, rate]);
      if (bucket.total >= fpVolume) fpHosts.push([m, rate]);
    }
    let figures: [number, number] = [-1, -1];
    if (srHosts.length > 0 && srHosts.length >= srMinHosts) {
      const mean = srHosts.reduce((sum, [, rate]) => sum + rate, 0) / srHosts.length;
      const variance = srHosts.reduce((sum, [, rate]) => sum + (rate - mean) ** 2, 0) / srHosts.length;
      const threshold = mean - (this.param('successRateStdevFactor') / 1000) * Math.sqrt(variance);
      figures = [mean, threshold];
      const type: EjectionType = origin === 'external' ? 'success_rate' : 'local_origin_success_rate';
      for (const [m, rate] of srHosts) {
        if (rate >= threshold || m.ejected) continue;
        this.stats.detected.get(type)?.inc();
        this.eject(m, type, {
          eject_success_rate_event: {
            host_success_rate: Math.trunc(rate),
            cluster_average_success_rate: Math.trunc(mean),
            cluster_success_rate_ejection_threshold: Math.max(0, Math.trunc(threshold)),
          },
        });
      }
    }
    if (fpHosts.length > 0 && fpHosts.length >= fpMinHosts) {
      const limit = this.param('failurePercentageThreshold');
      const type: EjectionType =
        origin === 'external' ? 'failure_percentage' : 'failure_percentage_local_origin';
      for (const [m, rate] of fpHosts) {
        if (100 - rate < limit || m.ejected) continue;
        this.stats.detected.get(type)?.inc();
        this.eject(m, type, { eject_failure_percentage_event: { host_success_rate: Math.trunc(rate) } });
      }
    }
    return figures;
  }

  /** Stops the interval; with `unejectAll` (the detector is gone from the config) its ejected hosts come back. */
  close(unejectAll: boolean): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (!unejectAll) return;
    for (const m of this.monitors.values()) {
      if (!m.ejected) continue;
      this.deps.store.dispatch(
        outlierChanged({
          cluster: this.name,
          address: m.address,
          ejected: false,
          reason: 'outlier detection removed',
        }),
        'outlier',
      );
    }
    this.stats.active.set(0);
  }
}
