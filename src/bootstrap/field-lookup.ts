/**
 * The field a key names in a message (proto name, `json_name` or lowerCamelCase), and the
 * findings for a key that names none or a deprecated one.
 */
import type protobuf from 'protobufjs';
import { nameOf, v3MessageName } from './schema.js';
import type { WalkContext } from './walk-context.js';

/**
 * The field a key names: its proto name, its `json_name` or its lowerCamelCase form. Own
 * properties only, so `toString` or `__proto__` is an unknown field, not `Object.prototype`.
 */
export function fieldOf(type: protobuf.Type, key: string): protobuf.Field | undefined {
  if (Object.hasOwn(type.fields, key)) return type.fields[key];
  return type.fieldsArray.find((f) => f.options?.json_name === key || camel(f.name) === key);
}

function camel(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

/** Why a v3 message does not know a key v2 has: v3 renamed the field, or removed it. */
export type V2Only = { renamedTo: string } | { removed: true };

/**
 * The fields v2 deprecated that v3 kept (deprecated, or not at all for `use_original_dst`):
 * they were deprecated after v3 was cut, in both versions. v3 removed every other one.
 */
const KEPT_IN_V3 = new Set([
  'envoy.config.filter.http.compressor.v2.Compressor.content_length',
  'envoy.config.filter.http.compressor.v2.Compressor.content_type',
  'envoy.config.filter.http.compressor.v2.Compressor.disable_on_etag_header',
  'envoy.config.filter.http.compressor.v2.Compressor.remove_accept_encoding_header',
  'envoy.config.filter.http.compressor.v2.Compressor.runtime_enabled',
  'envoy.config.rbac.v2.Principal.source_ip',
  'envoy.api.v2.Listener.use_original_dst',
]);

/** Whether v3 removed a field v2 deprecated (`deprecated` on the v2 field). */
export function removedInV3(type: protobuf.Type, field: protobuf.Field): boolean {
  return field.options?.deprecated === true && !KEPT_IN_V3.has(`${nameOf(type).slice(1)}.${field.name}`);
}

/**
 * What v3 writes in place of a v2 field it removed, by field
 * name or, where the name is ambiguous, by `message.field`, as the v2 protos' comments say.
 */
const V3_REPLACEMENTS: Record<string, string> = {
  hosts: 'load_assignment',
  tls_context: 'transport_socket',
  config: 'typed_config',
  per_filter_config: 'typed_per_filter_config',
  extension_protocol_options: 'typed_extension_protocol_options',
  request_mirror_policy: 'request_mirror_policies',
  regex_match: 'safe_regex_match',
  verify_subject_alt_name: 'match_subject_alt_names',
  allow_origin: 'allow_origin_string_match',
  allow_origin_regex: 'allow_origin_string_match',
  use_http2: 'codec_client_type: HTTP2',
  build_version: 'user_agent_build_version',
  'envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager.idle_timeout':
    'common_http_protocol_options.idle_timeout',
  'envoy.api.v2.route.RouteMatch.regex': 'safe_regex',
  'envoy.type.matcher.StringMatcher.regex': 'safe_regex',
};

function v2OnlyNote(key: string, v2Message: string, why: V2Only): string {
  if ('renamedTo' in why) return `: '${key}' is the v2 spelling, v3 writes '${why.renamedTo}'`;
  const instead = V3_REPLACEMENTS[`${v2Message}.${key}`] ?? V3_REPLACEMENTS[key];
  return `: '${key}' is a v2 field v3 removed${instead ? `; v3 writes ${instead}` : ''}`;
}

export function unknownField(
  ctx: WalkContext,
  here: string,
  key: string,
  type: protobuf.Type,
  v2Only?: V2Only,
): void {
  const v2 = nameOf(type).slice(1);
  const v3 = v3MessageName(v2);
  const message = ctx.v3 && v3 !== v2 ? `${v3} (read as ${v2})` : v2;
  const what = `unknown field '${key}' in ${message}${v2Only ? v2OnlyNote(key, v2, v2Only) : ''}`;
  if (!ctx.allowUnknown) {
    // In a v3 message it is most often a field of a later reference release (the v3 API grows):
    // say so, rather than only suspecting a typo.
    const why = !ctx.v3
      ? 'check the spelling, or pass --allow-unknown-static-fields to ignore it'
      : !v2Only
        ? 'a field this build does not implement, or a misspelling; pass --allow-unknown-static-fields to ignore it'
        : 'renamedTo' in v2Only
          ? 'check the spelling, or pass --allow-unknown-static-fields to ignore it'
          : 'write it as v3 does, or pass --allow-unknown-static-fields to ignore it';
    ctx.report.error(here, `${what} (${why})`, 'unknown');
    return;
  }
  ctx.report.unknownFields++;
  ctx.report.warn(here, `${what}, ignored (--allow-unknown-static-fields)`, `${nameOf(type)}.${key}`);
}

export function deprecatedField(
  ctx: WalkContext,
  here: string,
  field: protobuf.Field,
  type: protobuf.Type,
): void {
  const hint = field.name === 'hosts' ? ' (use load_assignment; when both are set load_assignment wins)' : '';
  ctx.report.warn(here, `using deprecated option '${nameOf(type).slice(1)}.${field.name}'${hint}`, undefined);
}
