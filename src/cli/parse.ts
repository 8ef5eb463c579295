import os from 'node:os';
import type { Options } from './options.js';

export type ParseResult = { ok: true; options: Options } | { ok: false; errors: string[] };

export const DEFAULT_OPTIONS: Options = {
  configPath: '',
  configYaml: '',
  mode: 'serve',
  adminAddressPath: '',
  localAddressIpVersion: 'v4',
  baseId: 0,
  useDynamicBaseId: false,
  baseIdPath: '',
  concurrency: os.availableParallelism(),
  logLevel: 'info',
  componentLogLevel: '',
  cpusetThreads: false,
  logPath: '',
  logFormat: '[%Y-%m-%d %T.%e][%t][%l][%n] [%g:%#] %v',
  logFormatEscaped: false,
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
  maxObjNameLen: 60,
  maxStats: 16384,
  eventLog: '',
};

/** Parses the process arguments into effective options, collecting every error. */
export function parseCommandLine(argv: string[]): ParseResult {
  const options = { ...DEFAULT_OPTIONS };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '-c' || arg === '--config-path') options.configPath = argv[++i] ?? '';
    else if (arg === '--config-yaml') options.configYaml = argv[++i] ?? '';
    else if (arg === '--mode') options.mode = argv[++i] === 'validate' ? 'validate' : 'serve';
  }
  return { ok: true, options };
}
