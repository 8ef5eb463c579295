import type { HttpFilterFactory } from '../api.js';
import { compileFault, FAULT_FIELD_TABLES, type FaultConfig } from './config.js';
import { FaultFilter, FaultStats } from './filter.js';

/** `envoy.filters.http.fault`: delays and aborts a share of requests (docs/http-filters.md). */
const CONFIG_TYPE = 'envoy.config.filter.http.fault.v2.HTTPFault';

export const faultFactory: HttpFilterFactory<FaultConfig> = {
  name: 'envoy.filters.http.fault',
  aliases: ['envoy.fault'],
  configType: CONFIG_TYPE,
  typeAliases: { 'envoy.extensions.filters.http.fault.v3.HTTPFault': CONFIG_TYPE },
  schema: { file: 'envoy/config/filter/http/fault/v2.proto' },
  fieldTables: FAULT_FIELD_TABLES,
  compile: compileFault,
  perRoute: compileFault,
  start(config, ctx) {
    const stats = new FaultStats(ctx.scope.scope('fault'));
    return () => new FaultFilter(config, CONFIG_TYPE, stats, ctx.runtime);
  },
};
