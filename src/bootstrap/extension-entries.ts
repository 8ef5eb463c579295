/**
 * How the canonical walk (canonical.ts) reads the messages that carry an extension: which
 * category a `name` picks in each, the findings for a config it cannot read, and which message
 * a route's `per_filter_config` entry holds.
 */
import type { Json } from '../../events/index.js';
import { isPlainObject } from './canonical-scalars.js';
import { findExtension } from './catalog.js';
import type { ExtensionCategory } from './extensions.js';
import { fieldPath } from './report.js';
import { TYPE_URL_PREFIX, v3MessageName } from './schema.js';
import type { WalkContext } from './walk-context.js';

/** Messages carrying an extension by `name` plus `config`/`typed_config`, and their category. */
export function extensionCategory(typeName: string, parentTypeName: string): ExtensionCategory | undefined {
  switch (typeName) {
    case '.envoy.api.v2.listener.Filter':
      return 'envoy.filters.network';
    case '.envoy.config.filter.network.http_connection_manager.v2.HttpFilter':
      return 'envoy.filters.http';
    case '.envoy.api.v2.listener.ListenerFilter':
      return 'envoy.filters.listener';
    case '.envoy.api.v2.core.TransportSocket':
      return parentTypeName === '.envoy.api.v2.listener.FilterChain'
        ? 'envoy.transport_sockets.downstream'
        : 'envoy.transport_sockets.upstream';
    case '.envoy.config.metrics.v2.StatsSink':
      return 'envoy.stats_sinks';
    case '.envoy.config.filter.accesslog.v2.AccessLog':
      return 'envoy.access_loggers';
    case '.envoy.config.trace.v2.Tracing.Http':
      return 'envoy.tracers';
    default:
      return undefined;
  }
}

/** A `typed_config` with fields but no `@type` (`{}` alone means the extension's defaults). */
export function lacksType(raw: unknown): boolean {
  return isPlainObject(raw) && !Object.hasOwn(raw, '@type') && Object.keys(raw).length > 0;
}

/**
 * One finding for a `typed_config` written without `@type`, saying what to add for the
 * extension its `name` picks. Its fields are not read: what they mean depends on the type,
 * and the compile step's findings under it (a "missing" field that is there) are dropped.
 */
export function missingType(
  entry: Record<string, unknown>,
  category: ExtensionCategory,
  here: string,
  ctx: WalkContext,
): void {
  const name = typeof entry.name === 'string' ? entry.name : '';
  const extension = findExtension(category, name);
  let add = `add "@type" naming the config message of ${name ? `'${name}'` : 'the extension'}`;
  if (extension) {
    const v2 = extension.configType;
    const v3 = v3MessageName(v2);
    const [first, other] = ctx.v3 ? [v3, v2] : [v2, v3];
    add = `add "@type": "${TYPE_URL_PREFIX}${first}"${other !== first ? ` (or the ${ctx.v3 ? 'v2' : 'v3'} "${TYPE_URL_PREFIX}${other}")` : ''}`;
  }
  ctx.report.error(here, `missing "@type"; ${add}`, 'missing');
  ctx.refused?.add(here);
}

/**
 * The message a route's `per_filter_config` entry holds: the per-route message of the HTTP
 * filter its key names (`RBACPerRoute`), else that filter's config; undefined for a key
 * naming no filter, which the route's compile step refuses.
 */
export function perFilterConfigType(key: string): string | undefined {
  const filter = findExtension('envoy.filters.http', key);
  return filter === undefined ? undefined : (filter.perRouteType ?? filter.configType);
}

/**
 * Early v2 bootstraps mark a `config` Struct written in the v1 JSON format with
 * `deprecated_v1: true`. Only its empty form, which means the filter's defaults, reads the
 * same in v2; any other v1 config is refused rather than misread as v2 fields.
 */
export function withoutV1Marker(config: Json, here: string, ctx: WalkContext): Json | undefined {
  if (!isPlainObject(config) || !Object.hasOwn(config, 'deprecated_v1')) return config;
  const { deprecated_v1: marker, ...rest } = config;
  const at = fieldPath(here, 'deprecated_v1');
  if (marker === true && Object.keys(rest).length > 0) {
    ctx.report.unsupported(
      at,
      'a filter config in the v1 JSON format (deprecated_v1: true); write the v2 fields',
    );
    return undefined;
  }
  ctx.report.warn(
    at,
    'deprecated_v1 is ignored: with no other field the config is the default',
    'deprecated_v1',
  );
  return rest;
}
