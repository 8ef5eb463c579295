/**
 * The compile step of v3's `application_log_config`, Istio's way of setting the format of the
 * proxy's own log lines: `log_format.text_format` is the `--log-format` of the process (the
 * same flags, docs/cli.md#log-format). Giving it and `--log-format` both is an error, as in
 * the reference; `json_format` is refused by name.
 */
import type { JsonObject } from '../../events/index.js';
import { objectOf } from '../../reducers/settings/values.js';
import { DEFAULT_LOG_FORMAT, type Options } from '../options.js';
import { acting, checkFields, type FieldTable, notYet } from './honoured.js';
import { Report } from './report.js';

const APPLICATION_LOG_FIELDS: FieldTable = acting('log_format');
const LOG_FORMAT_FIELDS: FieldTable = {
  text_format: 'act',
  json_format: notYet('JSON application logs from the bootstrap (json_format; --log-json writes JSON lines)'),
};

/** The field tables of this compile step, by the message name its findings use (docs/bootstrap.md lists them). */
export const FIELD_TABLES = {
  ApplicationLogConfig: APPLICATION_LOG_FIELDS,
  'ApplicationLogConfig.LogFormat': LOG_FORMAT_FIELDS,
};

/** The format `application_log_config` sets, or null when it sets none. Findings in `report`. */
export function compileApplicationLogConfig(bootstrap: JsonObject, report: Report): string | null {
  if (bootstrap.application_log_config === undefined) return null;
  const config = objectOf(bootstrap.application_log_config);
  checkFields(config, 'application_log_config', report, APPLICATION_LOG_FIELDS, 'ApplicationLogConfig');
  const format = objectOf(config.log_format);
  checkFields(
    format,
    'application_log_config.log_format',
    report,
    LOG_FORMAT_FIELDS,
    'ApplicationLogConfig.LogFormat',
  );
  return typeof format.text_format === 'string' ? format.text_format : null;
}

/**
 * The command line's `--log-format` beside the bootstrap's: an error when both set one (a
 * `--log-format` equal to the default counts as unset), as the reference refuses it.
 */
export function checkLogFormatOption(
  bootstrap: JsonObject,
  logFormat: string | undefined,
  report: Report,
): void {
  if (objectOf(bootstrap.application_log_config).log_format === undefined) return;
  if (logFormat !== undefined && logFormat !== DEFAULT_LOG_FORMAT)
    report.error(
      'application_log_config.log_format',
      'is set and so is --log-format: give the format in one place only',
    );
}

/** The options the process logs with: the bootstrap's text format in place of the default one. */
export function withApplicationLogFormat(options: Options, bootstrap: JsonObject): Options {
  // Its findings were the loader's, which refused a bootstrap with any.
  const format = compileApplicationLogConfig(bootstrap, new Report('application_log_config'));
  return format === null ? options : { ...options, logFormat: format };
}
