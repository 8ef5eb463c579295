/** The reference's default `--log-format`. */
export const DEFAULT_LOG_FORMAT = '[%Y-%m-%d %T.%e][%t][%l][%n] [%g:%#] %v';

/**
 * The effective command-line options: every option of the spec with its default applied.
 * `/server_info` echoes these as `command_line_options`.
 */
export interface Options {
  configPath: string;
  configYaml: string;
  /** `init_only` runs the checks of `validate` (see docs/cli.md). */
  mode: 'serve' | 'validate' | 'init_only';
  adminAddressPath: string;
  /** `--admin-read-only`: every mutating admin endpoint answers 403 (not an option of the reference). */
  adminReadOnly: boolean;
  localAddressIpVersion: 'v4' | 'v6';
  baseId: number;
  useDynamicBaseId: boolean;
  baseIdPath: string;
  /** Worker count after the defaults (hardware threads, `--cpuset-threads`, 0 -> 1). */
  concurrency: number;
  /** Canonical level name (`warn` on the command line becomes `warning`). */
  logLevel: string;
  componentLogLevel: string;
  cpusetThreads: boolean;
  logPath: string;
  logFormat: string;
  logFormatEscaped: boolean;
  /** `--log-json`: bunyan JSON records instead of `logFormat` lines (not an option of the reference). */
  logJson: boolean;
  restartEpoch: number;
  enableFineGrainLogging: boolean;
  socketPath: string;
  /** Permission bits (the command line's octal `600` is `0o600`). */
  socketMode: number;
  hotRestartVersion: boolean;
  serviceCluster: string;
  serviceNode: string;
  serviceZone: string;
  fileFlushIntervalMsec: number;
  drainTimeS: number;
  drainStrategy: 'gradual' | 'immediate';
  parentShutdownTimeS: number;
  disableHotRestart: boolean;
  enableMutexTracing: boolean;
  allowUnknownStaticFields: boolean;
  rejectUnknownDynamicFields: boolean;
  ignoreUnknownDynamicFields: boolean;
  disableExtensions: string[];
  enableCoreDump: boolean;
  statsTags: Array<{ name: string; value: string }>;
  /**
   * `--prometheus-names`: the prefix of `/stats/prometheus` metric and default tag label names
   * (not an option of the reference, whose names are `envoy_`; docs/stats.md says why `proxy`).
   */
  prometheusNames: 'proxy' | 'envoy';
  maxObjNameLen: number;
  maxStats: number;
  /** `--event-log PATH`: record every event as ndjson (empty: off). */
  eventLog: string;
  /**
   * `--event-log-checkpoint-every N`: a full snapshot line in the event log after every N
   * events (at the next point where no merge window is open); absent: 10000.
   */
  eventLogCheckpointEvery?: number;
}
