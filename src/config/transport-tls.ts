import type { JsonObject } from '../../events/index.js';
import { objectOf } from '../../reducers/settings/values.js';
import { CONFIG_TYPE, configTypeOf } from '../bootstrap/extensions.js';
import type { Report } from '../bootstrap/report.js';
import type { Secrets } from './secrets.js';

type Compile<T> = (raw: JsonObject, path: string, report: Report, secrets: Secrets) => T;

/**
 * The TLS context of a cluster or filter chain (`holder` at `path`), from its `transport_socket`
 * whose resolved `@type` is `tlsType`, or from the deprecated `tls_context`; null for plain
 * text (no socket, or a raw_buffer one). Setting both is an error, as in the reference.
 */
export function compileTransportTls<T>(
  holder: JsonObject,
  path: string,
  report: Report,
  secrets: Secrets,
  tlsType: string,
  compile: Compile<T>,
): T | null {
  if (holder.transport_socket !== undefined && holder.tls_context !== undefined)
    report.error(`${path}.tls_context`, 'only one of tls_context and transport_socket may be set');
  if (holder.transport_socket !== undefined) {
    const socket = objectOf(holder.transport_socket);
    const type = configTypeOf(socket);
    if (type === tlsType)
      return compile(objectOf(socket.typed_config), `${path}.transport_socket.typed_config`, report, secrets);
    if (type !== CONFIG_TYPE.rawBuffer)
      report.unsupported(
        `${path}.transport_socket`,
        `transport socket '${String(socket.name ?? type)}' is not implemented`,
      );
    return null;
  }
  if (holder.tls_context !== undefined)
    return compile(objectOf(holder.tls_context), `${path}.tls_context`, report, secrets);
  return null;
}
