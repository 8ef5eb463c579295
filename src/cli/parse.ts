import os from 'node:os';
import meow, { type AnyFlags } from 'meow';
import { parseComponentLevels } from '../logging/component-levels.js';
import { parseCliLevel } from '../logging/levels.js';
import { scanArgv } from './argv-scan.js';
import { FLAGS, flagKey } from './flags.js';
import type { Options } from '../options.js';

/**
 * `run`: serve or validate per `options.mode`; `help`, `version`, `hot-restart-version`:
 * print and exit 0 (they win over any other option, valid or not).
 */
export type CliAction = 'run' | 'help' | 'version' | 'hot-restart-version';

export type ParseResult =
  | { ok: true; options: Options; action: CliAction; warnings: string[] }
  | { ok: false; errors: string[] };

/** `std::thread::hardware_concurrency()`: every CPU of the machine. */
function hardwareThreads(): number {
  return os.cpus().length || os.availableParallelism();
}

export const DEFAULT_OPTIONS: Options = {
  configPath: '',
  configYaml: '',
  mode: 'serve',
  adminAddressPath: '',
  adminReadOnly: false,
  localAddressIpVersion: 'v4',
  baseId: 0,
  useDynamicBaseId: false,
  baseIdPath: '',
  concurrency: hardwareThreads(),
  logLevel: 'info',
  componentLogLevel: '',
  cpusetThreads: false,
  logPath: '',
  logFormat: '[%Y-%m-%d %T.%e][%t][%l][%n] [%g:%#] %v',
  logFormatEscaped: false,
  logJson: false,
  restartEpoch: 0,
  enableFineGrainLogging: false,
  socketPath: '@proxy_domain_socket',
  socketMode: 0o600,
  hotRestartVersion: false,
  serviceCluster: '',
  serviceNode: '',
  serviceZone: '',
  fileFlushIntervalMsec: 10000,
  drainTimeS: 600,
  drainStrategy: 'gradual',
  parentShutdownTimeS: 900,
  disableHotRestart: false,
  enableMutexTracing: false,
  allowUnknownStaticFields: false,
  rejectUnknownDynamicFields: false,
  ignoreUnknownDynamicFields: false,
  disableExtensions: [],
  enableCoreDump: false,
  statsTags: [],
  prometheusNames: 'proxy',
  maxObjNameLen: 60,
  maxStats: 16384,
  eventLog: '',
};

const UINT32_MAX = 0xffffffff;
const MAX_STATS_LIMIT = 100_000_000;
const MIN_OBJ_NAME_LEN = 60;
/**
 * The longest delay a Node timer holds (2^31-1 ms, 24.8 days): a longer one fires after 1 ms,
 * so a larger drain time closed a gracefully drained listener at once.
 */
const MAX_TIMER_MS = 2 ** 31 - 1;
const MAX_TIMER_S = Math.floor(MAX_TIMER_MS / 1000);

/** The meow flag definitions, every one collected as an array so repeats are seen. */
function meowFlags(): AnyFlags {
  const flags: AnyFlags = {};
  for (const spec of FLAGS) {
    flags[flagKey(spec.name)] = {
      type: spec.kind === 'switch' ? 'boolean' : 'string',
      isMultiple: true,
      ...(spec.short ? { shortFlag: spec.short } : {}),
    };
  }
  return flags;
}

/** The flags meow collected, read one by one; every error found goes to `errors`. */
class FlagReader {
  constructor(
    private readonly raw: Record<string, unknown>,
    readonly errors: string[],
  ) {}

  switchOn(name: string): boolean {
    return (this.raw[flagKey(name)] as boolean[] | undefined)?.includes(true) ?? false;
  }

  values(name: string): string[] {
    return (this.raw[flagKey(name)] as string[] | undefined) ?? [];
  }

  /** The last value given: a repeated option takes its last one. */
  value(name: string): string | undefined {
    return this.values(name).at(-1);
  }

  /** A non-negative integer no larger than `max`; records an error and returns undefined otherwise. */
  integer(name: string, text: string | undefined, max = Number.MAX_SAFE_INTEGER): number | undefined {
    if (text === undefined) return undefined;
    if (!/^\d+$/.test(text.trim())) {
      this.errors.push(`invalid value '${text}' for --${name}: expected a non-negative integer`);
      return undefined;
    }
    const n = Number(text.trim());
    if (n > max) {
      const why = max === MAX_TIMER_MS || max === MAX_TIMER_S ? ' (24.8 days, the longest timer)' : '';
      this.errors.push(`invalid value '${text}' for --${name}: at most ${max}${why}`);
      return undefined;
    }
    return n;
  }
}

/** Paths, names and formats, taken as given. */
function readTexts(r: FlagReader, options: Options): void {
  options.configPath = r.value('config-path') ?? '';
  options.configYaml = r.value('config-yaml') ?? '';
  options.adminAddressPath = r.value('admin-address-path') ?? '';
  options.baseIdPath = r.value('base-id-path') ?? '';
  options.logPath = r.value('log-path') ?? '';
  options.serviceCluster = r.value('service-cluster') ?? '';
  options.serviceNode = r.value('service-node') ?? '';
  options.serviceZone = r.value('service-zone') ?? '';
  options.eventLog = r.value('event-log') ?? '';
  options.logFormat = r.value('log-format') ?? DEFAULT_OPTIONS.logFormat;
  options.socketPath = r.value('socket-path') || DEFAULT_OPTIONS.socketPath;
}

/** Options that take one of a few words, and the log levels. */
function readChoices(r: FlagReader, options: Options): void {
  const mode = r.value('mode');
  if (mode !== undefined) {
    if (mode === 'serve' || mode === 'validate' || mode === 'init_only') options.mode = mode;
    else r.errors.push(`unknown mode '${mode}' (--mode takes serve, validate or init_only)`);
  }

  const ipVersion = r.value('local-address-ip-version');
  if (ipVersion !== undefined) {
    if (ipVersion === 'v4' || ipVersion === 'v6') options.localAddressIpVersion = ipVersion;
    else
      r.errors.push(`unknown IP address version '${ipVersion}' (--local-address-ip-version takes v4 or v6)`);
  }

  const prometheusNames = r.value('prometheus-names');
  if (prometheusNames !== undefined) {
    if (prometheusNames === 'proxy' || prometheusNames === 'envoy') options.prometheusNames = prometheusNames;
    else
      r.errors.push(
        `unknown prometheus-names '${prometheusNames}' (--prometheus-names takes proxy or envoy)`,
      );
  }
  const drainStrategy = r.value('drain-strategy');
  if (drainStrategy !== undefined) {
    if (drainStrategy === 'gradual' || drainStrategy === 'immediate') options.drainStrategy = drainStrategy;
    else
      r.errors.push(
        `unknown drain-strategy '${drainStrategy}' (--drain-strategy takes gradual or immediate)`,
      );
  }

  const logLevel = r.value('log-level');
  if (logLevel !== undefined) {
    const level = parseCliLevel(logLevel);
    if (level) options.logLevel = level;
    else {
      r.errors.push(
        `invalid log level specified '${logLevel}' (--log-level takes trace, debug, info, warning|warn, error, critical or off)`,
      );
    }
  }

  const componentLogLevel = r.value('component-log-level');
  if (componentLogLevel !== undefined) {
    const parsed = parseComponentLevels(componentLogLevel);
    if (parsed.ok) options.componentLogLevel = componentLogLevel;
    else r.errors.push(...parsed.errors);
  }
}

/** Numbers: ids, epochs, threads, intervals, limits and the socket's permissions. */
function readNumbers(r: FlagReader, options: Options, env: NodeJS.ProcessEnv): void {
  options.baseId = r.integer('base-id', r.value('base-id'), UINT32_MAX) ?? options.baseId;
  const checkpointEvery = r.integer(
    'event-log-checkpoint-every',
    r.value('event-log-checkpoint-every'),
    UINT32_MAX,
  );
  if (checkpointEvery === 0) r.errors.push('invalid value 0 for --event-log-checkpoint-every: at least 1');
  else if (checkpointEvery !== undefined) options.eventLogCheckpointEvery = checkpointEvery;
  options.useDynamicBaseId = r.switchOn('use-dynamic-base-id');
  options.restartEpoch =
    r.integer('restart-epoch', r.value('restart-epoch'), UINT32_MAX) ??
    (env.RESTART_EPOCH
      ? r.integer('restart-epoch (from $RESTART_EPOCH)', env.RESTART_EPOCH, UINT32_MAX)
      : undefined) ??
    options.restartEpoch;
  if (options.useDynamicBaseId && options.restartEpoch > 0) {
    r.errors.push(`cannot use --restart-epoch=${options.restartEpoch} with --use-dynamic-base-id`);
  }

  options.cpusetThreads = r.switchOn('cpuset-threads');
  const concurrency = r.integer('concurrency', r.value('concurrency'), UINT32_MAX);
  // sched_getaffinity's count is the cpuset the process may run on; Node exposes it as availableParallelism.
  const workers = concurrency ?? (options.cpusetThreads ? os.availableParallelism() : hardwareThreads());
  options.concurrency = Math.max(1, workers);

  options.fileFlushIntervalMsec =
    r.integer('file-flush-interval-msec', r.value('file-flush-interval-msec'), MAX_TIMER_MS) ??
    options.fileFlushIntervalMsec;
  options.drainTimeS = r.integer('drain-time-s', r.value('drain-time-s'), MAX_TIMER_S) ?? options.drainTimeS;
  options.parentShutdownTimeS =
    r.integer('parent-shutdown-time-s', r.value('parent-shutdown-time-s'), MAX_TIMER_S) ??
    options.parentShutdownTimeS;

  const maxStats = r.integer('max-stats', r.value('max-stats'));
  if (maxStats !== undefined) {
    if (maxStats > MAX_STATS_LIMIT) {
      r.errors.push(`the 'max-stats' value specified (${maxStats}) is more than the maximum value of 100M`);
    } else options.maxStats = maxStats;
  }
  const maxObjNameLen = r.integer('max-obj-name-len', r.value('max-obj-name-len'));
  if (maxObjNameLen !== undefined) {
    if (maxObjNameLen < MIN_OBJ_NAME_LEN) {
      r.errors.push(
        `the 'max-obj-name-len' value specified (${maxObjNameLen}) is less than the minimum value of ${MIN_OBJ_NAME_LEN}`,
      );
    } else options.maxObjNameLen = maxObjNameLen;
  }

  const socketMode = r.value('socket-mode');
  if (socketMode !== undefined) {
    if (!/^[0-7]{1,4}$/.test(socketMode)) {
      r.errors.push(
        `invalid value '${socketMode}' for --socket-mode: expected an octal permission such as 600`,
      );
    } else if (options.socketPath.startsWith('@')) {
      r.errors.push(
        `--socket-mode cannot be used with the abstract socket path '${options.socketPath}': give a filesystem --socket-path`,
      );
    } else options.socketMode = Number.parseInt(socketMode, 8);
  }
}

/** Switches, and the deprecated spelling of one. */
function readSwitches(r: FlagReader, options: Options, warnings: string[]): void {
  options.logFormatEscaped = r.switchOn('log-format-escaped');
  options.logJson = r.switchOn('log-json');
  options.adminReadOnly = r.switchOn('admin-read-only');
  options.enableFineGrainLogging = r.switchOn('enable-fine-grain-logging');
  options.hotRestartVersion = r.switchOn('hot-restart-version');
  options.disableHotRestart = r.switchOn('disable-hot-restart');
  options.enableMutexTracing = r.switchOn('enable-mutex-tracing');
  options.rejectUnknownDynamicFields = r.switchOn('reject-unknown-dynamic-fields');
  options.ignoreUnknownDynamicFields = r.switchOn('ignore-unknown-dynamic-fields');
  options.enableCoreDump = r.switchOn('enable-core-dump');
  options.allowUnknownStaticFields = r.switchOn('allow-unknown-static-fields');
  if (r.switchOn('allow-unknown-fields')) {
    options.allowUnknownStaticFields = true;
    warnings.push('--allow-unknown-fields is deprecated; use --allow-unknown-static-fields instead');
  }
}

/** Options that take a list: extensions to disable and fixed stats tags. */
function readLists(r: FlagReader, options: Options): void {
  const extensions = r.value('disable-extensions');
  if (extensions !== undefined) {
    for (const name of extensions.split(',').map((s) => s.trim())) {
      if (/^[^/\s]+\/[^/\s]+$/.test(name)) options.disableExtensions.push(name);
      else
        r.errors.push(`invalid extension name '${name}' in --disable-extensions: expected <category>/<name>`);
    }
  }

  for (const tag of r.values('stats-tag')) {
    const colon = tag.indexOf(':');
    const name = colon === -1 ? '' : tag.slice(0, colon);
    const tagValue = tag.slice(colon + 1);
    if (colon === -1) r.errors.push(`misformatted --stats-tag '${tag}': expected <name>:<value>`);
    else if (!/^[A-Za-z0-9]+$/.test(name)) {
      r.errors.push(`misformatted --stats-tag '${tag}': the name '${name}' must be alphanumeric`);
    } else if (tagValue.includes('.')) {
      r.errors.push(`misformatted --stats-tag '${tag}': the value '${tagValue}' must not contain '.'`);
    } else if (options.statsTags.some((t) => t.name === name)) {
      r.errors.push(`--stats-tag name '${name}' given more than once: one value per tag name`);
    } else options.statsTags.push({ name, value: tagValue });
  }
}

/**
 * Parses the process arguments (without `node` and the script) into effective options,
 * collecting every error; each error names the option and the bad value.
 */
export function parseCommandLine(argv: string[], env: NodeJS.ProcessEnv = process.env): ParseResult {
  const cli = meow({
    importMeta: import.meta,
    // Given, so meow neither searches for package.json nor titles the process after another name.
    pkg: { name: 'proxy', bin: { proxy: 'bin/proxy.js' } },
    argv,
    flags: meowFlags(),
    allowUnknownFlags: true,
    autoHelp: false,
    autoVersion: false,
  });
  const r = new FlagReader(cli.flags as Record<string, unknown>, []);
  if (r.switchOn('help')) return { ok: true, options: DEFAULT_OPTIONS, action: 'help', warnings: [] };
  if (r.switchOn('version')) return { ok: true, options: DEFAULT_OPTIONS, action: 'version', warnings: [] };

  const errors = r.errors;
  errors.push(...scanArgv(argv));
  const warnings: string[] = [];
  const options: Options = { ...DEFAULT_OPTIONS, disableExtensions: [], statsTags: [] };
  readTexts(r, options);
  readChoices(r, options);
  readNumbers(r, options, env);
  readSwitches(r, options, warnings);
  readLists(r, options);
  if (errors.length > 0) return { ok: false, errors };
  const action: CliAction = options.hotRestartVersion ? 'hot-restart-version' : 'run';
  return { ok: true, options, action, warnings };
}
