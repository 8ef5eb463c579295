import type { JsonObject } from '../../events/index.js';
import { fieldPath, type Report } from './report.js';

const HTTP_OPTIONS = 'envoy.extensions.upstreams.http.v3.HttpProtocolOptions';

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * v3 moved a cluster's HTTP settings into `typed_extension_protocol_options` under an
 * `HttpProtocolOptions`; the reference reads them as the fields they replaced. This lowers
 * that entry (found by its `@type`) onto the cluster's own fields, so the compile step and
 * the data plane read one place: `explicit_http_config` sets the HTTP/1.1 or HTTP/2 options,
 * `use_downstream_protocol_config` both plus `protocol_selection: USE_DOWNSTREAM_PROTOCOL`.
 * `auto_config` (ALPN choice) is refused. Findings on a lowered field name it as written.
 */
export function lowerHttpProtocolOptions(
  cluster: JsonObject,
  path: string,
  report: Report,
  /** The walk's canonical-to-written paths (`WalkContext.written`). */
  written?: Map<string, string>,
): void {
  const options = cluster.typed_extension_protocol_options;
  if (!isObject(options)) return;
  for (const [key, entry] of Object.entries(options)) {
    if (
      !isObject(entry) ||
      String(entry['@type'] ?? '')
        .split('/')
        .pop() !== HTTP_OPTIONS
    )
      continue;
    const at = `${fieldPath(path, 'typed_extension_protocol_options')}[${JSON.stringify(key)}]`;
    const moves: Array<[field: string, value: unknown, from: string]> = [
      ['common_http_protocol_options', entry.common_http_protocol_options, 'common_http_protocol_options'],
      [
        'upstream_http_protocol_options',
        entry.upstream_http_protocol_options,
        'upstream_http_protocol_options',
      ],
    ];
    for (const config of ['explicit_http_config', 'use_downstream_protocol_config'] as const) {
      const inner = entry[config];
      if (!isObject(inner)) continue;
      for (const field of ['http_protocol_options', 'http2_protocol_options'])
        moves.push([field, inner[field], `${config}.${field}`]);
    }
    if (isObject(entry.use_downstream_protocol_config))
      moves.push(['protocol_selection', 'USE_DOWNSTREAM_PROTOCOL', 'use_downstream_protocol_config']);
    if (entry.auto_config !== undefined)
      report.unsupported(
        `${at}.auto_config`,
        'auto_config (the upstream protocol chosen by ALPN) is not implemented: use explicit_http_config or use_downstream_protocol_config',
      );
    for (const [field, value, from] of moves) {
      if (value === undefined) continue;
      if (cluster[field] !== undefined) {
        report.error(`${at}.${from}`, `the cluster sets ${field} too: set it in one place`);
        continue;
      }
      cluster[field] = value as JsonObject;
      written?.set(fieldPath(path, field), `${at}.${from}`);
    }
    delete options[key];
  }
  if (Object.keys(options).length === 0) delete cluster.typed_extension_protocol_options;
}
