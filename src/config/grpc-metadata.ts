/**
 * `initial_metadata` of a management server's `GrpcService`: the headers every stream to it
 * carries, checked as gRPC would send them.
 */
import type { Json } from '../../events/config.js';
import { objectOf } from '../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable } from '../bootstrap/honoured.js';
import type { Report } from '../bootstrap/report.js';

export const HEADER_VALUE_FIELDS: FieldTable = acting('key', 'value');

/** A gRPC metadata name: lowercase token characters, as HTTP/2 headers are; `-bin` ones carry bytes. */
const METADATA_NAME = /^[0-9a-z!#$%&'*+.^_`|~-]+$/;

/**
 * `initial_metadata`: each `{ key, value }` a header of every stream to the server, as Consul's
 * `x-consul-token` and Kuma's `authorization`. A name gRPC cannot send is an error naming it.
 */
export function compileInitialMetadata(
  raw: Json | undefined,
  path: string,
  report: Report,
): Array<[string, string]> {
  const entries = Array.isArray(raw) ? raw : [];
  return entries.flatMap((entry, i) => {
    const here = `${path}[${i}]`;
    const header = objectOf(entry);
    checkFields(header, here, report, HEADER_VALUE_FIELDS, 'HeaderValue');
    const key = typeof header.key === 'string' ? header.key.toLowerCase() : '';
    const value = typeof header.value === 'string' ? header.value : '';
    if (!METADATA_NAME.test(key) || key.startsWith('grpc-')) {
      report.error(
        `${here}.key`,
        `'${key}' is not a metadata name a stream may carry (lowercase token characters, not grpc-...)`,
        key === '' ? 'missing' : 'invalid',
      );
      return [];
    }
    if (key.endsWith('-bin')) {
      report.unsupported(`${here}.key`, `binary metadata ('${key}') on xDS streams is not implemented`);
      return [];
    }
    if (!/^[\x20-\x7e]*$/.test(value)) {
      report.error(`${here}.value`, 'metadata values are printable ASCII', 'invalid');
      return [];
    }
    return [[key, value] as [string, string]];
  });
}
