/** `envoy.filters.network.http_connection_manager`: the HTTP connection manager (../http/) as a network filter. */
import { compileHcm, FIELD_TABLES, type HcmSpec } from '../http/hcm-config.js';
import { HttpConnectionManager } from '../http/manager.js';
import type { TerminalFilterFactory } from './api.js';
import { HTTP_CONNECTION_MANAGER } from './extensions.js';

export const httpConnectionManagerFactory: TerminalFilterFactory<HcmSpec> = {
  ...HTTP_CONNECTION_MANAGER,
  terminal: true,
  fieldTables: FIELD_TABLES,
  compile: compileHcm,
  build: (spec, deps) => new HttpConnectionManager(spec, deps),
};
