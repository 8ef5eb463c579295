import type { Json, JsonObject } from '../../../events/config.js';
import { objectOf } from '../../../reducers/settings/values.js';
import { configTypeOf } from '../../bootstrap/extensions.js';
import type { Report } from '../../bootstrap/report.js';
import type { CorsPolicy } from './cors.js';
import type { CsrfPolicy } from './csrf.js';
import { corsFactory } from './filters/cors.js';
import { csrfFactory } from './filters/csrf.js';
import { HTTP_FILTER_FACTORIES, httpFilterNamed } from './filters/registry.js';

/** The HTTP filters' settings a route or virtual host overrides, by filter. */
export interface FilterOverrides {
  /** The CORS filter's own `CorsPolicy` (v3), which wins over the owner's `cors`. */
  cors: CorsPolicy | null;
  csrf: CsrfPolicy | null;
  /** The per-request filters' overrides, compiled by their factories, by config message. */
  perFilter: ReadonlyMap<string, unknown> | null;
  /** Overrides keyed by a filter's `http_filters` name (filters that read them so); null for none. */
  named: ReadonlyMap<string, unknown> | null;
}

/**
 * A filter's override as the message it reads (`configType`): the loader read a
 * `typed_per_filter_config` `Any` by its `@type`, and a `per_filter_config` Struct as the
 * message its key's filter reads, so both arrive typed; the `@type` must be the filter's.
 */
function compileOverrideBody(
  value: Json,
  configType: string,
  at: string,
  report: Report,
): JsonObject | undefined {
  const type = configTypeOf({ typed_config: value });
  if (type !== configType) {
    report.error(
      `${at}.@type`,
      `${type ? `'${type}'` : 'no @type'} is not the config of this filter (expected ${configType})`,
    );
    return undefined;
  }
  const { '@type': _drop, ...fields } = objectOf(value);
  return fields;
}

/** The filters whose overrides may be keyed by their `http_filters` name, for the refusal's text. */
const NAMED_FILTERS = HTTP_FILTER_FACTORIES.filter((f) => f.perRouteByName === true)
  .map((f) => f.name)
  .join(', ');

/**
 * An override keyed by a filter's `http_filters` name, compiled by the factory whose per-route
 * message its `@type` is, when that factory reads overrides by name; null otherwise.
 */
function compileNamedOverride(value: Json, at: string, report: Report): unknown {
  const type = configTypeOf({ typed_config: value });
  const factory = HTTP_FILTER_FACTORIES.find((f) => (f.perRouteType ?? f.configType) === type);
  if (factory?.perRouteByName !== true || factory.perRoute === undefined) return null;
  const { '@type': _drop, ...fields } = objectOf(value);
  return factory.perRoute(fields, at, report);
}

/**
 * Compiles the `per_filter_config` / `typed_per_filter_config` of a route or virtual host
 * (`owner`, at `where`). Keys name HTTP filters by any spelling; each filter's factory compiles
 * its override, and a filter without one refuses it by name.
 */
export function compileFilterOverrides(owner: JsonObject, where: string, report: Report): FilterOverrides {
  const out: {
    cors: CorsPolicy | null;
    csrf: CsrfPolicy | null;
    perFilter: Map<string, unknown> | null;
    named: Map<string, unknown> | null;
  } = { cors: null, csrf: null, perFilter: null, named: null };
  if (owner.per_filter_config !== undefined && owner.typed_per_filter_config !== undefined)
    report.error(where, 'only one of typed_per_filter_config or per_filter_config can be specified');
  for (const field of ['per_filter_config', 'typed_per_filter_config'] as const) {
    for (const [name, value] of Object.entries(objectOf(owner[field]))) {
      const at = `${where}.${field}[${JSON.stringify(name)}]`;
      const factory = httpFilterNamed(name);
      if (!factory) {
        // The reference also finds a filter by the name its `http_filters` entry gives it
        // (`lua_filter_with_custom_name_1`): routes are compiled apart from any chain, so the
        // override's own `@type` says which filter it is for.
        const byName = field === 'typed_per_filter_config' ? compileNamedOverride(value, at, report) : null;
        if (byName !== null) {
          out.named ??= new Map();
          out.named.set(name, byName);
          continue;
        }
        report.error(
          at,
          `'${name}' is not an HTTP filter of this build; a key naming a filter by its http_filters ` +
            `name is implemented for typed_per_filter_config of ${NAMED_FILTERS} only (else key it by the extension's name, e.g. envoy.filters.http.fault)`,
          'unknown',
        );
        continue;
      }
      const type = factory.configType;
      if (factory.perRoute === undefined) {
        report.unsupported(at, `per-route config of ${factory.name} is not implemented`);
        continue;
      }
      const body = compileOverrideBody(value, factory.perRouteType ?? type, at, report);
      if (body === undefined) continue;
      const compiled = factory.perRoute(body, at, report);
      if (type === csrfFactory.configType) out.csrf = compiled as CsrfPolicy;
      else if (type === corsFactory.configType) out.cors = compiled as CorsPolicy;
      else {
        out.perFilter ??= new Map();
        out.perFilter.set(type, compiled);
      }
    }
  }
  return out;
}
