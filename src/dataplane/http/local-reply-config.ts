import type { JsonObject } from '../../../events/config.js';
import { listOf, objectOf } from '../../../reducers/settings/values.js';
import { inlineBytes } from '../../bootstrap/data-source.js';
import { acting, checkFields, type FieldTable, notYet } from '../../bootstrap/honoured.js';
import { attempt, type Report } from '../../bootstrap/report.js';
import { type AccessLogFilter, compileAccessLogFilter, type RuntimeLookup } from '../access-log/filters.js';
import { compileJsonFormat, compileTextFormat, type Formatter } from '../access-log/format.js';
import type { StreamInfo } from '../access-log/stream-info.js';
import { applyHeaderMutations, compileHeaderAdds, type HeaderMutation } from '../router/header-mutation.js';

/** A `SubstitutionFormatString` for a local reply's body, and the content type it is sent with. */
interface BodyFormat {
  format: Formatter;
  contentType: string;
}

/** One `ResponseMapper`: when its filter matches, its rewrites apply. */
interface ResponseMapper {
  filter: AccessLogFilter;
  status: number | null;
  body: string | null;
  headers: HeaderMutation | null;
  bodyFormat: BodyFormat | null;
}

/** HCM `local_reply_config` compiled: the mappers in order, and the body format when none sets one. */
export interface LocalReplySpec {
  mappers: ResponseMapper[];
  bodyFormat: BodyFormat | null;
}

const LOCAL_REPLY_FIELDS: FieldTable = acting('mappers', 'body_format');
const MAPPER_FIELDS: FieldTable = acting(
  'filter',
  'status_code',
  'body',
  'body_format_override',
  'headers_to_add',
);
const FORMAT_FIELDS: FieldTable = {
  ...acting('text_format', 'json_format', 'text_format_source', 'content_type'),
  omit_empty_values: notYet('omit_empty_values'),
};
// A file would be read once at load by the reference; this build takes the body inline only.
const DATA_SOURCE_FIELDS: FieldTable = {
  ...acting('inline_string', 'inline_bytes'),
  filename: notYet('a local reply body from a file (use inline_string)'),
  environment_variable: notYet('a local reply body from the environment (use inline_string)'),
};

/** The field tables of this compile step, by the message name its findings use (docs/bootstrap.md lists them). */
export const FIELD_TABLES = {
  LocalReplyConfig: LOCAL_REPLY_FIELDS,
  ResponseMapper: MAPPER_FIELDS,
  'SubstitutionFormatString (local reply)': FORMAT_FIELDS,
  'DataSource (local reply)': DATA_SOURCE_FIELDS,
};

function inlineText(ds: JsonObject, path: string, report: Report): string {
  checkFields(ds, path, report, DATA_SOURCE_FIELDS, 'DataSource');
  const bytes = inlineBytes(ds);
  if (bytes === undefined && ds.filename === undefined && ds.environment_variable === undefined)
    report.error(path, 'required: inline_string or inline_bytes', 'missing');
  return bytes?.toString('utf8') ?? '';
}

/**
 * A body format: the reference's `text_format` is sent as text/plain, `json_format` (typed:
 * numbers stay numbers) as application/json, unless `content_type` says otherwise.
 */
function compileBodyFormat(config: JsonObject, path: string, report: Report): BodyFormat | null {
  checkFields(config, path, report, FORMAT_FIELDS, 'SubstitutionFormatString');
  const set = ['text_format', 'json_format', 'text_format_source'].filter((k) => config[k] !== undefined);
  if (set.length !== 1) {
    report.error(
      path,
      `set exactly one of text_format, json_format, text_format_source (${set.join(', ') || 'none'} set)`,
    );
    return null;
  }
  const kind = set[0] as string;
  const json = kind === 'json_format';
  const format = attempt(report, `${path}.${kind}`, () => {
    if (json) return compileJsonFormat(objectOf(config.json_format), true);
    const text =
      kind === 'text_format'
        ? String(config.text_format)
        : inlineText(objectOf(config.text_format_source), `${path}.text_format_source`, report);
    return compileTextFormat(text);
  });
  if (format === undefined) return null;
  const contentType =
    typeof config.content_type === 'string' && config.content_type !== ''
      ? config.content_type
      : json
        ? 'application/json'
        : 'text/plain';
  return { format, contentType };
}

function compileMapper(config: JsonObject, path: string, report: Report): ResponseMapper {
  checkFields(config, path, report, MAPPER_FIELDS, 'ResponseMapper');
  if (config.filter === undefined) report.error(`${path}.filter`, 'required field missing', 'missing');
  const status = config.status_code === undefined ? null : Number(config.status_code);
  if (status !== null && !(Number.isInteger(status) && status >= 200 && status < 600))
    report.error(`${path}.status_code`, `must be from 200 to 599, got ${String(config.status_code)}`);
  return {
    filter: compileAccessLogFilter(objectOf(config.filter), `${path}.filter`, report),
    status,
    body: config.body === undefined ? null : inlineText(objectOf(config.body), `${path}.body`, report),
    headers:
      config.headers_to_add === undefined
        ? null
        : (attempt(report, `${path}.headers_to_add`, () => ({
            requestAdd: [],
            requestRemove: [],
            responseAdd: compileHeaderAdds(config.headers_to_add, `${path}.headers_to_add`, report),
            responseRemove: [],
          })) ?? null),
    bodyFormat:
      config.body_format_override === undefined
        ? null
        : compileBodyFormat(objectOf(config.body_format_override), `${path}.body_format_override`, report),
  };
}

/** Compiles `local_reply_config`; `path` names it in findings. */
export function compileLocalReplyConfig(config: JsonObject, path: string, report: Report): LocalReplySpec {
  checkFields(config, path, report, LOCAL_REPLY_FIELDS, 'LocalReplyConfig');
  return {
    mappers: listOf(config.mappers).map((m, i) => compileMapper(m, `${path}.mappers[${i}]`, report)),
    bodyFormat:
      config.body_format === undefined
        ? null
        : compileBodyFormat(objectOf(config.body_format), `${path}.body_format`, report),
  };
}

/** A local reply after `local_reply_config`: its status, body and the body's content type. */
export interface RewrittenReply {
  status: number;
  body: string | Buffer;
  contentType: string;
}

/**
 * Rewrites one local reply as the reference does: the first mapper whose filter matches (on
 * the stream with the reply's status) sets the body, adds its headers to `headers` (their
 * `%RESPONSE_CODE%` still the original), rewrites the status, then the body is formatted
 * (`%LOCAL_REPLY_BODY%`, `%RESPONSE_CODE%` the rewritten one) by the mapper's format or the
 * config's.
 */
export function rewriteLocalReply(
  spec: LocalReplySpec,
  info: StreamInfo,
  runtime: RuntimeLookup,
  status: number,
  body: string | Buffer,
  headers: string[],
): RewrittenReply {
  info.responseCode = status;
  // A `duration_filter` reads the time so far; the stream's end overwrites it.
  info.endedAt = performance.now();
  let text = typeof body === 'string' ? body : body.toString('utf8');
  let code = status;
  let format = spec.bodyFormat;
  let rewrote = false;
  for (const mapper of spec.mappers) {
    if (!mapper.filter(info, runtime)) continue;
    if (mapper.body !== null) text = mapper.body;
    if (mapper.headers !== null) applyHeaderMutations(headers, [mapper.headers], true, { info, host: null });
    if (mapper.status !== null) code = mapper.status;
    if (mapper.bodyFormat !== null) format = mapper.bodyFormat;
    rewrote = true;
    break;
  }
  info.responseCode = code;
  info.localReplyBody = text;
  if (format === null) return { status: code, body: rewrote ? text : body, contentType: 'text/plain' };
  return { status: code, body: format.format(info), contentType: format.contentType };
}
