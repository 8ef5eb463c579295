import { checkFields } from '../../../bootstrap/honoured.js';
import {
  addCorsHeaders,
  CorsFilter,
  type CorsPolicy,
  type CorsResponse,
  compileCorsPolicy,
  FIELD_TABLES,
} from '../cors.js';
import { randomDraw } from '../runtime-fraction.js';
import {
  CONTINUE,
  type FilterStatus,
  type FilterStream,
  forwardingRoute,
  type HttpFilterFactory,
  STOP_ITERATION,
  type StreamFilter,
} from './api.js';

/**
 * The config message, carried here rather than under proto/: the whole extension is this file
 * (and its line in registry.ts), as docs/http-filters.md's "Adding a filter" shows.
 */
const CORS_PROTO = `
syntax = "proto3";
package envoy.config.filter.http.cors.v2;
message Cors {}
// v3's per-route policy of the filter (typed_per_filter_config), at v3's numbers.
message CorsPolicy {
  repeated .envoy.type.matcher.StringMatcher allow_origin_string_match = 1;
  string allow_methods = 2;
  string allow_headers = 3;
  string expose_headers = 4;
  string max_age = 5;
  .google.protobuf.BoolValue allow_credentials = 6;
  .envoy.api.v2.core.RuntimeFractionalPercent filter_enabled = 7;
  .envoy.api.v2.core.RuntimeFractionalPercent shadow_enabled = 8;
  .google.protobuf.BoolValue allow_private_network_access = 9;
  .google.protobuf.BoolValue forward_not_matching_preflights = 10;
}
`;

const POLICY_TYPE = 'envoy.config.filter.http.cors.v2.CorsPolicy';

/**
 * The CORS filter of one request: decides on the request head (its route's and virtual host's
 * policies), answers an allowed preflight itself, and marks every response of a request whose
 * origin it allowed, the proxy's own replies included. A filter earlier in the chain that
 * answers the request first leaves it undecided: that answer gets no CORS headers, as in the
 * reference, where a filter's `decodeHeaders` never ran when one before it replied.
 */
class CorsStream implements StreamFilter {
  private response: CorsResponse | null = null;

  constructor(private readonly filter: CorsFilter) {}

  decodeHeaders(stream: FilterStream): FilterStatus {
    const hit = forwardingRoute(stream.route);
    if (hit === null) return CONTINUE;
    const verdict = this.filter.decode(stream.req, hit.route.cors, hit.vh.cors);
    if (verdict === null) return CONTINUE;
    this.response = verdict.response;
    if (verdict.preflight === null) return CONTINUE;
    stream.sendLocalReply(200, '', verdict.preflight);
    return STOP_ITERATION;
  }

  encodeHeaders(_status: number, headers: string[]): FilterStatus {
    if (this.response !== null) addCorsHeaders(headers, this.response);
    return CONTINUE;
  }
}

/**
 * CORS: its policy is on routes and virtual hosts (`cors`), or, as v3 writes it, the filter's
 * own `CorsPolicy` in their `typed_per_filter_config`, which wins over `cors` at its level.
 * The filter's own message has no fields.
 */
export const corsFactory: HttpFilterFactory<null> = {
  name: 'envoy.filters.http.cors',
  aliases: ['envoy.cors'],
  configType: 'envoy.config.filter.http.cors.v2.Cors',
  typeAliases: {
    'envoy.extensions.filters.http.cors.v3.Cors': 'envoy.config.filter.http.cors.v2.Cors',
    'envoy.extensions.filters.http.cors.v3.CorsPolicy': POLICY_TYPE,
  },
  schema: { source: CORS_PROTO },
  fieldTables: { Cors: {}, ...FIELD_TABLES },
  compile(config, path, report) {
    checkFields(config, path, report, {}, 'Cors');
    return null;
  },
  start(_config, ctx) {
    const filter = new CorsFilter(ctx.scope, ctx.runtime, randomDraw);
    return () => new CorsStream(filter);
  },
  perRouteType: POLICY_TYPE,
  perRoute(config, path, report): CorsPolicy {
    return compileCorsPolicy(config, path, report);
  },
};
