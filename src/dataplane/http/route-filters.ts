import type { Scope } from '../../stats/store.js';
import type { HttpRequest } from '../codec/request.js';
import type { CompiledRoute, CompiledVirtualHost } from '../router/table.js';
import { CorsFilter, type CorsResponse } from './cors.js';
import { CsrfFilter } from './csrf.js';
import type { RouteFilterSpec } from './filters/chain.js';
import { type RuntimeLookup, randomDraw } from './runtime-fraction.js';

/** What the route filters decided for one request. */
export interface RouteFilterVerdict {
  /** Headers the CORS filter adds to whatever response the request gets; null for none. */
  cors: CorsResponse | null;
  /** A local answer in place of routing on (a CORS preflight, a CSRF refusal), or null. */
  reply: { status: number; body: string; headers: string[] } | null;
}

type Step = { kind: 'cors'; filter: CorsFilter } | { kind: 'csrf'; filter: CsrfFilter };

/**
 * The HTTP filters that read the routing decision, CORS and CSRF, run in their chain order
 * between the health check and the router. One per connection manager: their stats live
 * under its `http.<stat_prefix>.` scope.
 */
export class RouteFilters {
  private readonly steps: Step[];

  constructor(specs: readonly RouteFilterSpec[], scope: Scope, runtime: RuntimeLookup) {
    this.steps = specs.map((spec) =>
      spec.kind === 'cors'
        ? { kind: 'cors', filter: new CorsFilter(scope, runtime, randomDraw) }
        : { kind: 'csrf', filter: new CsrfFilter(scope, spec.policy, runtime, randomDraw) },
    );
  }

  /** The verdict for `req` and its route (null when none matched); null when nothing applies. */
  decode(
    req: HttpRequest,
    hit: { vh: CompiledVirtualHost; route: CompiledRoute } | null,
  ): RouteFilterVerdict | null {
    // As in the reference's v2 filters, only routes to a cluster carry their policies; a
    // redirect or direct response route has none.
    const entry =
      hit !== null && (hit.route.action.kind === 'cluster' || hit.route.action.kind === 'weighted')
        ? hit
        : null;
    let cors: CorsResponse | null = null;
    for (const step of this.steps) {
      if (step.kind === 'cors') {
        if (entry === null) continue;
        const verdict = step.filter.decode(req, entry.route.cors, entry.vh.cors);
        if (verdict === null) continue;
        cors = verdict.response;
        if (verdict.preflight) return { cors, reply: { status: 200, body: '', headers: verdict.preflight } };
      } else if (step.filter.rejects(req, entry && (entry.route.csrf ?? entry.vh.csrf))) {
        return { cors, reply: { status: 403, body: 'Invalid origin', headers: [] } };
      }
    }
    return cors === null ? null : { cors, reply: null };
  }
}
