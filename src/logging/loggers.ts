import bunyan from 'bunyan';
import type { LogLevel } from '../../events/logging.js';
import { DEFAULT_LOG_FORMAT, type Options } from '../options.js';
import { parseComponentLevels } from './component-levels.js';
import { escapeLogLine } from './escape.js';
import { compileLogFormat, type LogFormatter } from './format.js';
import { BUNYAN_LEVEL, levelName, parseCliLevel } from './levels.js';
import { LOGGER_NAMES } from './names.js';
import { fileSink, type LogSink, stderrSink } from './sink.js';
import { externalCaller } from './source-path.js';

/** The options logging is configured from (a subset of the command line). */
export type LoggingOptions = Pick<
  Options,
  | 'logLevel'
  | 'componentLogLevel'
  | 'logPath'
  | 'logFormat'
  | 'logFormatEscaped'
  | 'logJson'
  | 'fileFlushIntervalMsec'
  | 'enableFineGrainLogging'
>;

const DEFAULTS: LoggingOptions = {
  logLevel: 'info',
  componentLogLevel: '',
  logPath: '',
  logFormat: DEFAULT_LOG_FORMAT,
  logFormatEscaped: false,
  logJson: false,
  fileFlushIntervalMsec: 10000,
  enableFineGrainLogging: false,
};

/** One child logger per component (`admin`, `config`, `upstream`, ...). */
export interface Loggers {
  readonly root: bunyan;
  /**
   * The logger of a component. With `--enable-fine-grain-logging` the logger is that of
   * the calling source file instead, named by its path (`src/upstream/dns.ts`).
   */
  get(component: string): bunyan;
  /** Every logger in registry order with its level, as `/logging` lists them. */
  list(): Array<{ name: string; level: LogLevel }>;
  /** Sets one logger's level; false when no logger has that name. */
  setLevel(name: string, level: LogLevel): boolean;
  setAllLevels(level: LogLevel): void;
  /** Reopens the log file (SIGUSR1, `POST /reopen_logs`). */
  reopen(): void;
  flush(): void;
  /** Flushes and closes the log file; SIGUSR1 no longer reopens it. */
  close(): void;
}

/** Record fields bunyan itself sets; anything else a caller passed is printed after the message. */
const CORE_FIELDS = new Set([
  'name',
  'hostname',
  'pid',
  'level',
  'msg',
  'time',
  'v',
  'src',
  'component',
  'worker',
]);

/**
 * This process's data-plane worker id (`--concurrency` > 1: 1..N, set by the worker pool);
 * 0 in the primary. It is `%t` and the `worker` field: the reference's thread id.
 */
const WORKER_ID = Number(process.env.PROXY_WORKER_ID ?? 0) || 0;

/** The message plus any extra fields the caller logged (`log.info({cluster}, 'added')`). */
function messageOf(rec: Record<string, unknown>): string {
  const extra: Record<string, unknown> = {};
  let count = 0;
  for (const [key, value] of Object.entries(rec)) {
    if (CORE_FIELDS.has(key)) continue;
    extra[key] = value instanceof Error ? (value.stack ?? value.message) : value;
    count++;
  }
  const msg = String(rec.msg ?? '');
  if (count === 0) return msg;
  try {
    return `${msg} ${JSON.stringify(extra)}`;
  } catch {
    return `${msg} [unserialisable fields: ${Object.keys(extra).join(', ')}]`;
  }
}

/** A bunyan raw stream that renders each record with the compiled `--log-format`. */
function formattingStream(format: LogFormatter, escaped: boolean, sink: LogSink): bunyan.WriteFn {
  return {
    write(object: object) {
      const rec = object as Record<string, unknown>;
      const time = rec.time instanceof Date ? rec.time : new Date();
      // Wall-clock milliseconds; the sub-millisecond digits come from the monotonic clock.
      const nanos = time.getMilliseconds() * 1e6 + Number(process.hrtime.bigint() % 1_000_000n);
      const line = format({
        time,
        nanos,
        level: levelName(Number(rec.level)),
        logger: String(rec.component ?? 'misc'),
        message: messageOf(rec),
        pid: process.pid,
        threadId: WORKER_ID,
        source: format.needsSource ? externalCaller() : undefined,
      });
      sink.write(escaped ? escapeLogLine(`${line}\n`) : `${line}\n`);
    },
  };
}

/**
 * `--log-json`: each record as one bunyan JSON line (what `bunyan` the CLI reads): numeric
 * `level`, `name`, `hostname`, `pid`, `time`, `msg`, `v`, and every structured field as a
 * field of its own.
 */
function jsonStream(sink: LogSink): bunyan.WriteFn {
  return {
    write(object: object) {
      let line: string;
      try {
        line = JSON.stringify(object);
      } catch {
        line = JSON.stringify(object, bunyan.safeCycles());
      }
      sink.write(`${line}\n`);
    },
  };
}

/** Accepts the older `createLoggers('debug')` form as well as the options. */
function toOptions(arg: bunyan.LogLevel | Partial<LoggingOptions> | undefined): LoggingOptions {
  if (arg === undefined) return DEFAULTS;
  if (typeof arg === 'number') return { ...DEFAULTS, logLevel: levelName(arg) };
  if (typeof arg === 'string') return { ...DEFAULTS, logLevel: arg === 'fatal' ? 'critical' : arg };
  return { ...DEFAULTS, ...arg };
}

let active: Loggers | null = null;
/** Every not-yet-closed set of loggers: SIGUSR1 reopens all their files. */
const open = new Set<Loggers>();
let signalListening = false;

/** One process-wide SIGUSR1 listener (which also keeps Node from starting its inspector). */
function listenForReopenSignal(): void {
  if (signalListening) return;
  signalListening = true;
  process.on('SIGUSR1', () => {
    for (const loggers of open) loggers.reopen();
  });
}

/**
 * Creates the loggers from the logging options (or just a level) and makes them the ones
 * `listLoggers`, `setLevel`, `setAllLevels` and `reopenLogs` act on.
 * Throws with a message naming `--log-path` when the log file cannot be opened.
 */
export function createLoggers(arg?: bunyan.LogLevel | Partial<LoggingOptions>): Loggers {
  const options = toOptions(arg);
  const defaultLevel = parseCliLevel(options.logLevel) ?? 'info';
  const componentLevels = options.componentLogLevel ? parseComponentLevels(options.componentLogLevel) : null;
  const format = compileLogFormat(options.logFormat);
  let sink: LogSink;
  try {
    sink = options.logPath ? fileSink(options.logPath, options.fileFlushIntervalMsec) : stderrSink();
  } catch (err) {
    throw new Error(`cannot open --log-path '${options.logPath}': ${(err as Error).message}`);
  }
  // A source location costs a stack capture per emitted record: taken only when the format prints it.
  const root = bunyan.createLogger({
    name: 'proxy',
    worker: WORKER_ID,
    level: BUNYAN_LEVEL[defaultLevel],
    // Text lines print an error's stack themselves; JSON needs it as fields.
    ...(options.logJson ? { serializers: { err: bunyan.stdSerializers.err } } : {}),
    streams: [
      {
        type: 'raw',
        stream: options.logJson ? jsonStream(sink) : formattingStream(format, options.logFormatEscaped, sink),
      },
    ],
  });
  const registry = new Map<string, { logger: bunyan; level: LogLevel }>();
  const register = (name: string) => {
    let entry = registry.get(name);
    if (!entry) {
      const level = (componentLevels?.ok && componentLevels.levels[name]) || defaultLevel;
      const logger = root.child({ component: name });
      logger.level(BUNYAN_LEVEL[level]);
      entry = { logger, level };
      registry.set(name, entry);
    }
    return entry;
  };
  if (!options.enableFineGrainLogging) for (const name of LOGGER_NAMES) register(name);

  const loggers: Loggers = {
    root,
    get: (component) =>
      register(options.enableFineGrainLogging ? (externalCaller()?.file ?? component) : component).logger,
    list: () => [...registry].map(([name, { level }]) => ({ name, level })),
    setLevel(name, level) {
      const entry = registry.get(name);
      if (!entry) return false;
      entry.level = level;
      entry.logger.level(BUNYAN_LEVEL[level]);
      return true;
    },
    setAllLevels(level) {
      root.level(BUNYAN_LEVEL[level]);
      for (const name of registry.keys()) loggers.setLevel(name, level);
    },
    reopen: () => sink.reopen(),
    flush: () => sink.flush(),
    close() {
      open.delete(loggers);
      sink.close();
      if (active === loggers) active = null;
    },
  };
  active = loggers;
  open.add(loggers);
  listenForReopenSignal();
  return loggers;
}

/** The active loggers' names and levels (empty before `createLoggers`). */
export function listLoggers(): Array<{ name: string; level: LogLevel }> {
  return active?.list() ?? [];
}

/** Sets one logger's level on the active loggers; false when there is no such logger. */
export function setLevel(name: string, level: LogLevel): boolean {
  return active?.setLevel(name, level) ?? false;
}

/** Sets every active logger to `level`. */
export function setAllLevels(level: LogLevel): void {
  active?.setAllLevels(level);
}

/** Reopens the active log file, as SIGUSR1 does; `POST /reopen_logs` calls this. */
export function reopenLogs(): void {
  active?.reopen();
}
