import { CONFIG_TYPE } from '../../../../bootstrap/extensions.js';
import type { HttpFilterFactory } from '../api.js';
import { compileFault, FAULT_FIELD_TABLES, type FaultConfig } from './config.js';
import { FaultFilter, FaultStats } from './filter.js';

/** `envoy.filters.http.fault`: delays and aborts a share of requests (docs/http-filters.md). */
export const faultFactory: HttpFilterFactory<FaultConfig> = {
  configType: CONFIG_TYPE.fault,
  fieldTables: FAULT_FIELD_TABLES,
  compile: compileFault,
  perRoute: compileFault,
  start(config, ctx) {
    const stats = new FaultStats(ctx.scope.scope('fault'));
    return () => new FaultFilter(config, CONFIG_TYPE.fault, stats, ctx.runtime);
  },
};
