import type { Json, JsonObject } from '../../../events/config.js';
import { runtimeValue } from '../../../reducers/runtime.js';
import { listOf, objectOf } from '../../../reducers/settings/values.js';
import { inlineBytes } from '../../bootstrap/data-source.js';
import { builtInForType, CONFIG_TYPE, configTypeOf } from '../../bootstrap/extensions.js';
import { acting, checkFields, type FieldTable, notYet } from '../../bootstrap/honoured.js';
import { attempt, type Report } from '../../bootstrap/report.js';
import type { Core } from '../../core.js';
import { whyNotWritable } from '../../writable.js';
import { type AccessLogFile, openAccessLogFile, openAccessLogStream } from './file-sink.js';
import { type AccessLogFilter, compileAccessLogFilter, type RuntimeLookup } from './filters.js';
import { compileJsonFormat, compileTextFormat, DEFAULT_FORMAT, type Formatter } from './format.js';
import type { StreamInfo } from './stream-info.js';

/** One `AccessLog` entry compiled: where, what (the format, parsed once) and when (the filter). */
export interface AccessLogSpec {
  /** A file path, or the process's own stdout or stderr (the stream loggers). */
  path: string;
  stream?: 'stdout' | 'stderr';
  format: Formatter;
  filter: AccessLogFilter | null;
}

const ACCESS_LOG_FIELDS: FieldTable = acting('name', 'filter', 'typed_config');
const FILE_FIELDS: FieldTable = acting('path', 'format', 'json_format', 'typed_json_format', 'log_format');
const STREAM_FIELDS: FieldTable = acting('log_format');
const SUBSTITUTION_FIELDS: FieldTable = {
  ...acting('text_format', 'json_format', 'text_format_source'),
  omit_empty_values: notYet('omit_empty_values'),
  // The reference reads it only where a local reply's body is formatted, never in an access log.
  content_type: 'advise',
};
const DATA_SOURCE_FIELDS: FieldTable = acting('inline_string', 'inline_bytes');

/** The field tables of this compile step with a rule other than `act` (docs/bootstrap.md lists them). */
export const FIELD_TABLES = { SubstitutionFormatString: SUBSTITUTION_FIELDS };

/** The loggers this build has, by their resolved `@type`. */
const STREAMS: Record<string, 'stdout' | 'stderr'> = {
  [CONFIG_TYPE.stdoutAccessLog]: 'stdout',
  [CONFIG_TYPE.stderrAccessLog]: 'stderr',
};
const LOGGERS = [CONFIG_TYPE.fileAccessLog, CONFIG_TYPE.stdoutAccessLog, CONFIG_TYPE.stderrAccessLog]
  .map((t) => builtInForType('envoy.access_loggers', t)?.name ?? t)
  .join(', ');

/**
 * Compiles an `access_log` list (HCM, TCP proxy, router `upstream_log`, admin): each entry
 * must be the file, stdout or stderr access logger, picked by its resolved `@type`. `path`
 * names the list in findings.
 */
export function compileAccessLogs(list: Json | undefined, path: string, report: Report): AccessLogSpec[] {
  const out: AccessLogSpec[] = [];
  listOf(list).forEach((entry, i) => {
    const at = `${path}[${i}]`;
    checkFields(entry, at, report, ACCESS_LOG_FIELDS, 'AccessLog');
    const type = configTypeOf(entry);
    const stream = Object.hasOwn(STREAMS, type) ? STREAMS[type] : undefined;
    if (type !== CONFIG_TYPE.fileAccessLog && !stream) {
      report.unsupported(
        `${at}.name`,
        `access logger '${String(entry.name ?? '')}' is not implemented (use one of ${LOGGERS})`,
      );
      return;
    }
    const config = objectOf(entry.typed_config);
    const here = `${at}.typed_config`;
    checkFields(
      config,
      here,
      report,
      stream ? STREAM_FIELDS : FILE_FIELDS,
      stream ? 'StreamAccessLog' : 'FileAccessLog',
    );
    const file = typeof config.path === 'string' ? config.path : '';
    if (!stream && !file) report.error(`${here}.path`, 'required field missing', 'missing');
    // As the reference opens the file when the config is made: what cannot be opened fails
    // there, not on every line later (nothing but a log line said the access log was lost).
    const problem = !stream && file ? whyNotWritable(file) : null;
    if (problem) report.error(`${here}.path`, `unable to open file '${file}': ${problem}`);
    const formats = ['format', 'json_format', 'typed_json_format', 'log_format'].filter(
      (k) => config[k] !== undefined,
    );
    if (formats.length > 1)
      report.error(
        here,
        `set one of format, json_format, typed_json_format, log_format (${formats.join(', ')} set)`,
      );
    const formatPath = `${here}.${formats[0] ?? 'format'}`;
    if (config.log_format !== undefined) checkLogFormat(objectOf(config.log_format), formatPath, report);
    const format = attempt(report, formatPath, () => formatterOf(config));
    const filter =
      entry.filter === undefined
        ? null
        : compileAccessLogFilter(objectOf(entry.filter), `${at}.filter`, report);
    if (format) out.push({ path: file, ...(stream ? { stream } : {}), format, filter });
  });
  return out;
}

/** A v3 `SubstitutionFormatString`: one format, and a text source only inline (no file is read per line). */
function checkLogFormat(log: JsonObject, here: string, report: Report): void {
  checkFields(log, here, report, SUBSTITUTION_FIELDS, 'SubstitutionFormatString');
  if (log.text_format_source !== undefined) {
    const source = objectOf(log.text_format_source);
    checkFields(source, `${here}.text_format_source`, report, DATA_SOURCE_FIELDS, 'DataSource');
    if (inlineBytes(source) === undefined)
      report.error(`${here}.text_format_source`, 'required: inline_string or inline_bytes');
  }
}

function formatterOf(config: JsonObject): Formatter {
  if (config.json_format !== undefined) return compileJsonFormat(objectOf(config.json_format), false);
  if (config.typed_json_format !== undefined)
    return compileJsonFormat(objectOf(config.typed_json_format), true);
  if (config.log_format !== undefined) {
    const log = objectOf(config.log_format);
    // v3's json_format renders numbers and booleans as such, as v2's typed_json_format did.
    if (log.json_format !== undefined) return compileJsonFormat(objectOf(log.json_format), true);
    const source =
      log.text_format_source === undefined ? undefined : inlineBytes(objectOf(log.text_format_source));
    const text = source?.toString('utf8') ?? (typeof log.text_format === 'string' ? log.text_format : '');
    return compileTextFormat(text || DEFAULT_FORMAT);
  }
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
      const file = spec.stream
        ? openAccessLogStream(spec.stream, ctx.options.fileFlushIntervalMsec)
        : openAccessLogFile(spec.path, ctx.options.fileFlushIntervalMsec);
      opened.push({ spec, file });
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
