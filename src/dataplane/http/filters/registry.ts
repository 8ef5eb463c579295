import { answersTo } from '../../../bootstrap/extensions.js';
import type { FilterContext, HttpFilterFactory, StreamFilterMaker } from './api.js';
import type { StreamFilterSpec } from './chain.js';
import { compressorFactory } from './compressor/index.js';
import { corsFactory } from './cors.js';
import { csrfFactory } from './csrf.js';
import { decompressorFactory } from './decompressor/index.js';
import { extAuthzFactory } from './ext-authz/index.js';
import { faultFactory } from './fault/index.js';
import { grpcHttp1BridgeFactory, grpcWebFactory } from './grpc/index.js';
import { healthCheckFactory } from './health-check.js';
import { localRateLimitFactory } from './local-ratelimit/index.js';
import { luaFactory } from './lua/index.js';
import { rateLimitFactory } from './ratelimit/index.js';
import { rbacFactory } from './rbac/index.js';
import { routerFactory } from './router/index.js';
import { tapFactory } from './tap.js';

/**
 * Every HTTP filter of this build, one factory each, found by its config message. Adding a
 * filter is its own file or folder here plus one line in this list.
 */
export const HTTP_FILTER_FACTORIES: readonly HttpFilterFactory[] = [
  registered(routerFactory),
  registered(healthCheckFactory),
  registered(tapFactory),
  registered(corsFactory),
  registered(csrfFactory),
  registered(grpcHttp1BridgeFactory),
  registered(grpcWebFactory),
  registered(faultFactory),
  registered(rbacFactory),
  registered(extAuthzFactory),
  registered(luaFactory),
  registered(rateLimitFactory),
  registered(localRateLimitFactory),
  registered(compressorFactory),
  registered(decompressorFactory),
];

/** A factory as the registry holds it: its config is only ever the one its own `compile` made. */
function registered<C>(factory: HttpFilterFactory<C>): HttpFilterFactory {
  return factory as unknown as HttpFilterFactory;
}

const byType = new Map(HTTP_FILTER_FACTORIES.map((f) => [f.configType, f]));

/** The factory of a config message, or undefined when this build has no such HTTP filter. */
export function httpFilterFactory(configType: string): HttpFilterFactory | undefined {
  return byType.get(configType);
}

/** The HTTP filter a config names by any of its names (`envoy.csrf`, `proxy.filters.http.csrf`). */
export function httpFilterNamed(name: string): HttpFilterFactory | undefined {
  return HTTP_FILTER_FACTORIES.find((f) => answersTo(f, name));
}

/** The makers of a chain's per-request filters, once per connection manager; null for none. */
export function startStreamFilters(
  specs: readonly StreamFilterSpec[],
  ctx: FilterContext,
): StreamFilterMaker[] | null {
  if (specs.length === 0) return null;
  return specs.map((spec) => {
    const factory = byType.get(spec.configType);
    if (factory?.start === undefined)
      throw new Error(`HTTP filter ${spec.configType} runs per request but has no start`);
    return factory.start(spec.config, ctx, spec.name);
  });
}
