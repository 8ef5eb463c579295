import { type JsonObject, outlierChanged } from '../../../events/index.js';
import type { ClusterEntry, HostState } from '../../../reducers/index.js';
import { runtimeValue } from '../../../reducers/runtime.js';
import { clusterStatName } from '../../../reducers/settings/cluster.js';
import { objectOf } from '../../../reducers/settings/values.js';
import type { OutlierFigures } from '../../../views/clusters/figures.js';
import { Report } from '../../bootstrap/report.js';
import { followClusters } from '../../control/follow-clusters.js';
import type { Counter, Gauge, Scope } from '../../stats/store.js';
import type { HealthDeps } from './check-context.js';
import { clusterHealth, compileOutlierEventLog, OUTLIER_NUMBERS, type OutlierSettings } from './config.js';
import { JsonLinesLog } from './event-log.js';

/** Why a host was ejected: the reference's ejection types, as the stats and events name them. */
export type EjectionType =
  | 'consecutive_5xx'
  | 'consecutive_gateway_failure'
  | 'consecutive_local_origin_failure'
  | 'success_rate'
  | 'local_origin_success_rate'
  | 'failure_percentage'
  | 'failure_percentage_local_origin';

const EJECTION_TYPES: readonly EjectionType[] = [
  'consecutive_5xx',
  'consecutive_gateway_failure',
  'consecutive_local_origin_failure',
  'success_rate',
  'local_origin_success_rate',
  'failure_percentage',
  'failure_percentage_local_origin',
];

/** The `enforcing_*` percentage of each ejection type. */
const ENFORCING: Record<EjectionType, keyof OutlierSettings> = {
  consecutive_5xx: 'enforcingConsecutive5xx',
  consecutive_gateway_failure: 'enforcingConsecutiveGatewayFailure',
  consecutive_local_origin_failure: 'enforcingConsecutiveLocalOriginFailure',
  success_rate: 'enforcingSuccessRate',
  local_origin_success_rate: 'enforcingLocalOriginSuccessRate',
  failure_percentage: 'enforcingFailurePercentage',
  failure_percentage_local_origin: 'enforcingFailurePercentageLocalOrigin',
};

/**
 * The reference's `OutlierEjectionType` name of each ejection type, for the event log
 * (`cluster_manager.outlier_detection.event_log_path`: one `OutlierDetectionEvent` per line).
 */
const LOGGED_TYPE: Record<EjectionType, string> = {
  consecutive_5xx: 'CONSECUTIVE_5XX',
  consecutive_gateway_failure: 'CONSECUTIVE_GATEWAY_FAILURE',
  consecutive_local_origin_failure: 'CONSECUTIVE_LOCAL_ORIGIN_FAILURE',
  success_rate: 'SUCCESS_RATE',
  local_origin_success_rate: 'SUCCESS_RATE_LOCAL_ORIGIN',
  failure_percentage: 'FAILURE_PERCENTAGE',
  failure_percentage_local_origin: 'FAILURE_PERCENTAGE_LOCAL_ORIGIN',
};

/** Runtime key of each numeric setting: `outlier_detection.<config field>`. */
const RUNTIME_KEY = new Map<keyof OutlierSettings, string>([
  ...OUTLIER_NUMBERS.map(
    ([field, key]) => [field, `outlier_detection.${key}`] as [keyof OutlierSettings, string],
  ),
  ['intervalMs', 'outlier_detection.interval_ms'],
  ['baseEjectionTimeMs', 'outlier_detection.base_ejection_time_ms'],
]);

/** Requests and successes of one origin in the current interval. */
interface Bucket {
  total: number;
  success: number;
}

/** The reference's `DetectorHostMonitorImpl`: one host's counters and ejection record. */
interface HostMonitor {
  address: string;
  ejected: boolean;
  numEjections: number;
  lastEjectionAt: number;
  /** When the host was last ejected or returned (the log's `secs_since_last_action`), null before. */
  lastActionAt: number | null;
  lastType: EjectionType;
  consecutive5xx: number;
  consecutiveGatewayFailure: number;
  consecutiveLocalOriginFailure: number;
  external: Bucket;
  local: Bucket;
  /** Success rates of the last interval, -1 when its volume was too low. */
  successRate: number;
  localOriginSuccessRate: number;
}

class OutlierStats {
  readonly active: Gauge;
  readonly overflow: Counter;
  readonly enforcedTotal: Counter;
  readonly detected = new Map<EjectionType, Counter>();
  readonly enforced = new Map<EjectionType, Counter>();
  constructor(scope: Scope) {
    this.active = scope.gauge('ejections_active', 'Accumulate');
    this.overflow = scope.counter('ejections_overflow');
    this.enforcedTotal = scope.counter('ejections_enforced_total');
    for (const type of EJECTION_TYPES) {
      this.detected.set(type, scope.counter(`ejections_detected_${type}`));
      this.enforced.set(type, scope.counter(`ejections_enforced_${type}`));
    }
  }
}

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
class ClusterDetector {
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

/** The outlier detectors of every cluster with `outlier_detection`. */
export interface OutlierDetection {
  /** One outcome of a request (HTTP status, 0 without a response) to a member of `cluster`. */
  put(cluster: string, address: string, status: number): void;
  figures(cluster: string): OutlierFigures | undefined;
  hostSuccessRate(
    cluster: string,
    address: string,
  ): { successRate: number; localOriginSuccessRate: number } | undefined;
  close(): void;
}

/**
 * Starts outlier detection (an edge of the process that owns the store; workers send their
 * outcomes to it). Ejections and returns are `health/outlier-changed` events.
 */
export function startOutlierDetection(deps: HealthDeps, now: () => number = Date.now): OutlierDetection {
  const logPath = compileOutlierEventLog(
    objectOf(objectOf(deps.store.state.bootstrap?.config.cluster_manager).outlier_detection),
    'cluster_manager.outlier_detection',
    new Report('bootstrap'),
  );
  const eventLog = logPath
    ? new JsonLinesLog(logPath, (err) =>
        deps.log
          ?.get('upstream')
          .error({ err, path: logPath }, 'outlier event log: writing failed, no more lines'),
      )
    : null;

  function follow(name: string, entry: ClusterEntry, detector: ClusterDetector | undefined) {
    const settings = clusterHealth(entry.config).outlier;
    if (detector && detector.config !== entry.config) {
      detector.close(settings === null);
      detector = undefined;
    }
    if (!settings) return undefined;
    detector ??= new ClusterDetector(name, entry.config, settings, deps, now, eventLog);
    detector.syncHosts(entry.hosts);
    return detector;
  }

  const detectors = followClusters<ClusterDetector | undefined>(deps.store, {
    added: (name, entry) => follow(name, entry, undefined),
    changed: (name, entry, detector) => follow(name, entry, detector),
    removed: (_name, detector) => detector?.close(false),
    // One bad snapshot must not end outlier detection: the next one is followed again.
    failed: (err) =>
      deps.log?.get('upstream').error({ err }, 'outlier detection: a snapshot could not be followed'),
  });
  return {
    put: (cluster, address, status) => detectors.get(cluster)?.put(address, status),
    figures: (cluster) => detectors.get(cluster)?.figures,
    hostSuccessRate(cluster, address) {
      const m = detectors.get(cluster)?.monitors.get(address);
      return m ? { successRate: m.successRate, localOriginSuccessRate: m.localOriginSuccessRate } : undefined;
    },
    close() {
      detectors.close();
      for (const detector of detectors.values()) detector?.close(false);
      eventLog?.close();
    },
  };
}
