/** `envoy.filters.network.http_connection_manager`: the HTTP connection manager (../http/) as a network filter. */
import { compileHcm, FIELD_TABLES, type HcmSpec } from '../http/hcm-config.js';
import { HttpConnectionManager } from '../http/manager.js';
import { CONFIG_TYPE } from '../../bootstrap/extensions.js';
import type { TerminalFilterFactory } from './api.js';

const HCM_V3 = 'envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';

export const httpConnectionManagerFactory: TerminalFilterFactory<HcmSpec> = {
  name: 'envoy.filters.network.http_connection_manager',
  aliases: ['envoy.http_connection_manager'],
  configType: CONFIG_TYPE.httpConnectionManager,
  typeAliases: { [HCM_V3]: CONFIG_TYPE.httpConnectionManager },
  schema: { file: 'envoy/config/filter/network/http_connection_manager/v2.proto' },
  terminal: true,
  fieldTables: FIELD_TABLES,
  compile: compileHcm,
  build: (spec, deps) => new HttpConnectionManager(spec, deps),
};
