import type { JsonObject } from '../../../events/config.js';
import { objectOf } from '../../../reducers/settings/values.js';
import { configTypeOf } from '../../bootstrap/extensions.js';
import type { FieldTable } from '../../bootstrap/honoured.js';
import type { Report } from '../../bootstrap/report.js';
import type { FilterChain } from './filters/chain.js';
import { HTTP_FILTER_FACTORIES, httpFilterFactory } from './filters/registry.js';
import { routerFactory } from './filters/router/index.js';
import { FIELD_TABLES as FRACTION_FIELD_TABLES } from './runtime-fraction.js';

/** The field tables of this compile step, by the message name its findings use (docs/bootstrap.md lists them). */
export const FIELD_TABLES: Record<string, FieldTable> = {
  ...Object.assign({}, ...HTTP_FILTER_FACTORIES.map((f) => f.fieldTables)),
  ...FRACTION_FIELD_TABLES,
};

/**
 * Compiles `http_filters`, each picked by its resolved `typed_config` `@type` (the loader
 * resolved every spelling of its name through the extension registry). The router must come
 * last: filters after it would never run. An empty list is the router alone.
 */
export function compileHttpFilters(list: JsonObject[], where: string, report: Report): FilterChain {
  const chain: FilterChain = {
    healthCheck: null,
    upstreamLogs: [],
    router: { suppressEnvoyHeaders: false, respectExpectedRqTimeout: false, strictCheckHeaders: [] },
    stream: [],
  };
  list.forEach((f, i) => {
    const at = `${where}[${i}]`;
    const type = configTypeOf(f);
    // An unresolved name was reported by the loader, which resolves every extension.
    if (type === '') return;
    const factory = httpFilterFactory(type);
    if (factory === undefined) {
      report.error(
        `${at}.name`,
        `'${String(f.name ?? type)}' is not an HTTP filter of this build`,
        'unknown',
      );
      return;
    }
    const path = `${at}.typed_config`;
    const config = factory.compile(objectOf(f.typed_config), path, report);
    if (factory.install) factory.install(chain, config, at, report);
    else chain.stream.push({ configType: type, config, name: typeof f.name === 'string' ? f.name : '' });
  });
  // An empty list routes (as before the filter list existed); a non-empty one must say so.
  if (list.length > 0 && configTypeOf(list[list.length - 1] ?? {}) !== routerFactory.configType)
    report.error(
      where,
      `the HTTP filter chain needs the router filter (${routerFactory.name}) last`,
      'missing',
    );
  return chain;
}
