import type { Json, JsonObject } from '../../../events/config.js';
import { runtimeValue } from '../../../reducers/runtime.js';
import { objectOf } from '../../../reducers/settings/values.js';
import { CONFIG_TYPE, configTypeOf, extensionForType } from '../../bootstrap/extensions.js';
import { acting, checkFields, type FieldTable } from '../../bootstrap/honoured.js';
import { attempt, type Report } from '../../bootstrap/report.js';
import type { Core } from '../../core.js';
import { listOf } from '../router/matchers.js';
import { type AccessLogFile, openAccessLogFile } from './file-sink.js';
import { type AccessLogFilter, compileAccessLogFilter, type RuntimeLookup } from './filters.js';
import { compileJsonFormat, compileTextFormat, DEFAULT_FORMAT, type Formatter } from './format.js';
import type { StreamInfo } from './stream-info.js';

/** One `AccessLog` entry compiled: where, what (the format, parsed once) and when (the filter). */
export interface AccessLogSpec {
  path: string;
  format: Formatter;
  filter: AccessLogFilter | null;
}

const ACCESS_LOG_FIELDS: FieldTable = acting('name', 'filter', 'typed_config');
const FILE_FIELDS: FieldTable = acting('path', 'format', 'json_format', 'typed_json_format');
/** The one access logger this build has, as the registry names it. */
const FILE_LOGGER =
  extensionForType('envoy.access_loggers', CONFIG_TYPE.fileAccessLog)?.name ?? CONFIG_TYPE.fileAccessLog;

/**
 * Compiles an `access_log` list (HCM, TCP proxy, router `upstream_log`): each entry must be
 * the file access logger, picked by its resolved `@type`. `path` names the list in findings.
 */
export function compileAccessLogs(list: Json | undefined, path: string, report: Report): AccessLogSpec[] {
  const out: AccessLogSpec[] = [];
  listOf(list).forEach((entry, i) => {
    const at = `${path}[${i}]`;
    checkFields(entry, at, report, ACCESS_LOG_FIELDS, 'AccessLog');
    if (configTypeOf(entry) !== CONFIG_TYPE.fileAccessLog) {
      report.unsupported(
        `${at}.name`,
        `access logger '${String(entry.name ?? '')}' is not implemented (use ${FILE_LOGGER})`,
      );
      return;
    }
    const config = objectOf(entry.typed_config);
    const here = `${at}.typed_config`;
    checkFields(config, here, report, FILE_FIELDS, 'FileAccessLog');
    const file = typeof config.path === 'string' ? config.path : '';
    if (!file) report.error(`${here}.path`, 'required field missing', 'missing');
    const formats = ['format', 'json_format', 'typed_json_format'].filter((k) => config[k] !== undefined);
    if (formats.length > 1)
      report.error(here, `set one of format, json_format, typed_json_format (${formats.join(', ')} set)`);
    const format = attempt(report, `${here}.${formats[0] ?? 'format'}`, () => formatterOf(config));
    const filter =
      entry.filter === undefined
        ? null
        : compileAccessLogFilter(objectOf(entry.filter), `${at}.filter`, report);
    if (format) out.push({ path: file, format, filter });
  });
  return out;
}

function formatterOf(config: JsonObject): Formatter {
  if (config.json_format !== undefined) return compileJsonFormat(objectOf(config.json_format), false);
  if (config.typed_json_format !== undefined)
    return compileJsonFormat(objectOf(config.typed_json_format), true);
  const text = typeof config.format === 'string' && config.format !== '' ? config.format : DEFAULT_FORMAT;
  return compileTextFormat(text);
}

/** The access logs of one HCM or TCP proxy, files open: one call per finished stream. */
export interface AccessLogger {
  log(info: StreamInfo): void;
  /** Lets go of the files (the listener that owned them is gone). */
  release(): void;
}

/**
 * Opens the files of compiled access logs; null when there are none, so a stream without
 * access logs pays one null check. A file that cannot be opened is reported and left out,
 * the others still log.
 */
export function startAccessLogs(
  specs: readonly AccessLogSpec[],
  ctx: Pick<Core, 'options' | 'log' | 'store'>,
): AccessLogger | null {
  if (specs.length === 0) return null;
  const opened: Array<{ spec: AccessLogSpec; file: AccessLogFile }> = [];
  for (const spec of specs) {
    try {
      opened.push({ spec, file: openAccessLogFile(spec.path, ctx.options.fileFlushIntervalMsec) });
    } catch (err) {
      ctx.log.get('file').error({ path: spec.path }, `cannot open access log: ${(err as Error).message}`);
    }
  }
  if (opened.length === 0) return null;
  const runtime: RuntimeLookup = (key) => runtimeValue(ctx.store.state, key);
  return {
    log(info) {
      if (info.endedAt === 0) info.endedAt = performance.now();
      for (const { spec, file } of opened)
        if (!spec.filter || spec.filter(info, runtime)) file.write(spec.format(info));
    },
    release() {
      for (const { file } of opened) file.release();
    },
  };
}
