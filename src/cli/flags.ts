/**
 * The table of every command-line option. It drives the meow flag definitions, the
 * unknown-option check and the `--help` text, so an option is declared exactly once.
 */
export interface FlagSpec {
  /** Long name without the leading `--`. */
  readonly name: string;
  /** One-letter alias without the leading `-`. */
  readonly short?: string;
  /** `switch` takes no value; `value` takes one. */
  readonly kind: 'switch' | 'value';
  /** Placeholder shown in `--help` for a value option. */
  readonly valueName?: string;
  /** May be given more than once (`--stats-tag`). */
  readonly repeatable?: boolean;
  /** Default as `--help` shows it. */
  readonly defaultText?: string;
  readonly help: string;
}

export const FLAGS: readonly FlagSpec[] = [
  {
    name: 'config-path',
    short: 'c',
    kind: 'value',
    valueName: 'path',
    help: 'Bootstrap file; the extension selects the format: .json, .yaml/.yml, .pb (binary proto3), .pb_text (text proto3)',
  },
  {
    name: 'config-yaml',
    kind: 'value',
    valueName: 'yaml',
    help: 'Bootstrap as YAML (or JSON); merged over --config-path when both are given',
  },
  {
    name: 'mode',
    kind: 'value',
    valueName: 'serve|validate|init_only',
    defaultText: 'serve',
    help: 'serve: validate the configuration and serve; validate: validate, print OK or the errors, exit; init_only: an alias of validate',
  },
  {
    name: 'admin-address-path',
    kind: 'value',
    valueName: 'path',
    help: 'File the admin address and port are written to',
  },
  {
    name: 'local-address-ip-version',
    kind: 'value',
    valueName: 'v4|v6',
    defaultText: 'v4',
    help: 'IP version of the local address (affects headers such as X-Forwarded-For)',
  },
  {
    name: 'base-id',
    kind: 'value',
    valueName: 'uint32',
    defaultText: '0',
    help: 'Base ID of the hot-restart domain; unique per process running on one machine',
  },
  {
    name: 'use-dynamic-base-id',
    kind: 'switch',
    help: 'Select an unused base ID (supersedes --base-id); not allowed with --restart-epoch > 0',
  },
  { name: 'base-id-path', kind: 'value', valueName: 'path', help: 'Write the base ID to this file' },
  {
    name: 'concurrency',
    kind: 'value',
    valueName: 'uint32',
    defaultText: 'hardware threads',
    help: 'Worker threads; 0 still runs one worker',
  },
  {
    name: 'log-level',
    short: 'l',
    kind: 'value',
    valueName: '[trace][debug][info][warning|warn][error][critical][off]',
    defaultText: 'info',
    help: 'Level of every logger',
  },
  {
    name: 'component-log-level',
    kind: 'value',
    valueName: 'component:level,...',
    help: 'Per-logger levels, e.g. upstream:debug,config:trace',
  },
  {
    name: 'cpuset-threads',
    kind: 'switch',
    help: 'Without --concurrency, use the CPUs this process may run on (Linux cpuset) as the worker count',
  },
  {
    name: 'log-path',
    kind: 'value',
    valueName: 'path',
    help: 'Log file, reopened on SIGUSR1; stderr when unset',
  },
  {
    name: 'log-format',
    kind: 'value',
    valueName: 'format',
    defaultText: '[%Y-%m-%d %T.%e][%t][%l][%n] [%g:%#] %v',
    help: 'Log line layout (flags listed in docs/cli.md)',
  },
  {
    name: 'log-format-escaped',
    kind: 'switch',
    help: 'C-escape log lines so one message stays on one line (the final newline is kept)',
  },
  {
    name: 'log-json',
    kind: 'switch',
    help: 'Log records as bunyan JSON lines (numeric level, name, hostname, pid, time, msg, fields as fields) instead of --log-format text; read them with the bunyan CLI',
  },
  {
    name: 'admin-read-only',
    kind: 'switch',
    help: 'The admin refuses every mutating endpoint (POST) with 403 and the reason; reads still work',
  },
  {
    name: 'restart-epoch',
    kind: 'value',
    valueName: 'uint32',
    defaultText: '0, or $RESTART_EPOCH',
    help: 'Hot-restart epoch; increment on every hot restart',
  },
  {
    name: 'enable-fine-grain-logging',
    kind: 'switch',
    help: 'One logger per source file; /logging lists file paths as logger names',
  },
  {
    name: 'socket-path',
    kind: 'value',
    valueName: 'path',
    defaultText: '@proxy_domain_socket',
    help: 'Hot-restart socket; a leading @ means the abstract namespace',
  },
  {
    name: 'socket-mode',
    kind: 'value',
    valueName: 'octal',
    defaultText: '600',
    help: 'Hot-restart socket permissions; not usable with an abstract (@) socket path',
  },
  {
    name: 'hot-restart-version',
    kind: 'switch',
    help: 'Print the hot-restart compatibility version and exit',
  },
  {
    name: 'service-cluster',
    kind: 'value',
    valueName: 'name',
    help: 'Local cluster name; overrides node.cluster of the bootstrap',
  },
  {
    name: 'service-node',
    kind: 'value',
    valueName: 'name',
    help: 'Local node name; overrides node.id of the bootstrap',
  },
  {
    name: 'service-zone',
    kind: 'value',
    valueName: 'zone',
    help: 'Local zone; overrides node.locality.zone of the bootstrap',
  },
  {
    name: 'file-flush-interval-msec',
    kind: 'value',
    valueName: 'msec',
    defaultText: '10000',
    help: 'Interval at which buffered log files are flushed (also when the buffer is full)',
  },
  {
    name: 'drain-time-s',
    kind: 'value',
    valueName: 'seconds',
    defaultText: '600',
    help: 'Drain time for hot restart and for listeners modified or removed',
  },
  {
    name: 'drain-strategy',
    kind: 'value',
    valueName: 'gradual|immediate',
    defaultText: 'gradual',
    help: 'gradual: the share of requests asked to drain rises to 100% over the drain time; immediate: all at once',
  },
  {
    name: 'parent-shutdown-time-s',
    kind: 'value',
    valueName: 'seconds',
    defaultText: '900',
    help: 'Time after which the hot-restart parent shuts down',
  },
  { name: 'disable-hot-restart', kind: 'switch', help: 'Disable hot restart' },
  {
    name: 'enable-mutex-tracing',
    kind: 'switch',
    help: 'Enable contention statistics and GET /contention',
  },
  {
    name: 'allow-unknown-fields',
    kind: 'switch',
    help: 'Deprecated alias of --allow-unknown-static-fields',
  },
  {
    name: 'allow-unknown-static-fields',
    kind: 'switch',
    help: 'Warn about (instead of rejecting) unknown fields of the static configuration',
  },
  {
    name: 'reject-unknown-dynamic-fields',
    kind: 'switch',
    help: 'Reject unknown fields of dynamic configuration',
  },
  {
    name: 'ignore-unknown-dynamic-fields',
    kind: 'switch',
    help: 'Ignore unknown fields of dynamic configuration without warnings or counts',
  },
  {
    name: 'disable-extensions',
    kind: 'value',
    valueName: 'category/name,...',
    help: 'Extensions that configuration may not use',
  },
  {
    name: 'enable-core-dump',
    kind: 'switch',
    help: 'Linux: raise the core file size soft limit to the hard limit (no-op elsewhere)',
  },
  {
    name: 'stats-tag',
    kind: 'value',
    valueName: 'tag:value',
    repeatable: true,
    help: 'Tag added to every stat; tag names alphanumeric, values without "."; repeatable',
  },
  {
    name: 'prometheus-names',
    kind: 'value',
    valueName: 'proxy|envoy',
    defaultText: 'proxy',
    help: 'Prometheus metric and label prefix of /stats/prometheus: envoy_ serves the names existing Envoy dashboards query',
  },
  {
    name: 'max-obj-name-len',
    kind: 'value',
    valueName: 'uint64',
    defaultText: '60',
    help: 'Maximum length of cluster/route_config/listener names; at least 60',
  },
  {
    name: 'max-stats',
    kind: 'value',
    valueName: 'uint64',
    defaultText: '16384',
    help: 'Maximum number of stats; at most 100 million',
  },
  {
    name: 'event-log',
    kind: 'value',
    valueName: 'path',
    help: 'Record every control-plane event to this ndjson file',
  },
  {
    name: 'event-log-checkpoint-every',
    kind: 'value',
    valueName: 'uint32',
    defaultText: '10000',
    help: 'With --event-log: write a full snapshot after this many events, so replays start near any point',
  },
  { name: 'version', kind: 'switch', help: 'Print the build version and exit' },
  { name: 'help', short: 'h', kind: 'switch', help: 'Print this text and exit' },
];

/** `config-path` -> `configPath`: the key meow uses for a flag. */
export function flagKey(name: string): string {
  return name.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());
}
