import type { JsonObject } from '../../../events/config.js';
import type { HttpConnectionManagerDeps, NetworkFilterHandler } from './types.js';

/** Builds the HTTP connection manager network filter (implementation in progress). */
export function createHttpConnectionManager(
  _config: JsonObject,
  _deps: HttpConnectionManagerDeps,
): NetworkFilterHandler {
  throw new Error('http_connection_manager: not implemented yet');
}
