/**
 * A listener filter chain's TLS context, apart from the listener's compile step (listener.ts):
 * the loaded-certificates view (`tls-loaded.ts`) reads it without the chain's filters, whose
 * factories reach the data plane that the view sits under.
 */
import type { JsonObject } from '../../events/config.js';
import { CONFIG_TYPE } from '../bootstrap/extensions.js';
import type { Report } from '../bootstrap/report.js';
import { NO_SECRETS, type Secrets } from './secrets.js';
import { compileDownstreamTls, type DownstreamTls } from './tls-context.js';
import { compileTransportTls } from './transport-tls.js';

/** A chain's TLS context (its TLS `transport_socket` or `tls_context`); null for plain text. */
export function compileChainTls(
  chain: JsonObject,
  path: string,
  report: Report,
  secrets: Secrets = NO_SECRETS,
): DownstreamTls | null {
  return compileTransportTls(chain, path, report, secrets, CONFIG_TYPE.downstreamTls, compileDownstreamTls);
}
