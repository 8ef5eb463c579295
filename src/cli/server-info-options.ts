import type { JsonObject } from '../../events/config.js';
import type { Options } from '../options.js';

const MODE_NAMES = { serve: 'Serve', validate: 'Validate', init_only: 'InitOnly' } as const;
const DRAIN_STRATEGY_NAMES = { gradual: 'Gradual', immediate: 'Immediate' } as const;

/**
 * The effective options as `/server_info` prints `command_line_options`
 * (`envoy.admin.v3.CommandLineOptions` in proto3 JSON with every primitive field present):
 * uint64 `base_id` as a string, durations as `"600s"`, enums by name.
 */
export function commandLineOptionsJson(options: Options): JsonObject {
  return {
    base_id: String(options.baseId),
    use_dynamic_base_id: options.useDynamicBaseId,
    base_id_path: options.baseIdPath,
    concurrency: options.concurrency,
    config_path: options.configPath,
    config_yaml: options.configYaml,
    allow_unknown_static_fields: options.allowUnknownStaticFields,
    reject_unknown_dynamic_fields: options.rejectUnknownDynamicFields,
    ignore_unknown_dynamic_fields: options.ignoreUnknownDynamicFields,
    admin_address_path: options.adminAddressPath,
    local_address_ip_version: options.localAddressIpVersion,
    log_level: options.logLevel,
    component_log_level: options.componentLogLevel,
    log_format: options.logFormat,
    log_format_escaped: options.logFormatEscaped,
    log_path: options.logPath,
    hot_restart_version: options.hotRestartVersion,
    service_cluster: options.serviceCluster,
    service_node: options.serviceNode,
    service_zone: options.serviceZone,
    file_flush_interval: millisDuration(options.fileFlushIntervalMsec),
    drain_time: `${options.drainTimeS}s`,
    drain_strategy: DRAIN_STRATEGY_NAMES[options.drainStrategy],
    parent_shutdown_time: `${options.parentShutdownTimeS}s`,
    mode: MODE_NAMES[options.mode],
    disable_hot_restart: options.disableHotRestart,
    enable_mutex_tracing: options.enableMutexTracing,
    restart_epoch: options.restartEpoch,
    cpuset_threads: options.cpusetThreads,
    disabled_extensions: [...options.disableExtensions],
    bootstrap_version: 0,
  };
}

/** Milliseconds as a proto3 JSON Duration: `10000` -> `"10s"`, `1500` -> `"1.500s"`. */
function millisDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  const millis = ms % 1000;
  return millis === 0 ? `${seconds}s` : `${seconds}.${String(millis).padStart(3, '0')}s`;
}
