/**
 * A compiled route table read per request: the virtual host and route a request matches, the
 * weighted cluster a draw picks, a redirect's `Location`.
 */
import type { HttpRequest } from '../codec/request.js';
import type { RouteAction } from './route-action.js';
import type { CompiledRoute, CompiledVirtualHost, RouteTable } from './table.js';

function findVirtualHostFor(table: RouteTable, host: string): CompiledVirtualHost | null {
  const exact = table.exact.get(host);
  if (exact) return exact;
  for (const [suffix, vh] of table.suffixes)
    if (host.length > suffix.length && host.endsWith(suffix)) return vh;
  for (const [prefix, vh] of table.prefixes)
    if (host.length > prefix.length && host.startsWith(prefix)) return vh;
  return null;
}

/**
 * The virtual host for an authority: the full `host:port` first, then the host without
 * its port, then `*`. Matching is case-insensitive (the codecs lowercase the authority).
 */
export function findVirtualHost(table: RouteTable, authority: string): CompiledVirtualHost | null {
  // Only `*` (a sidecar's usual table): no lookup of the authority, whose string is new per request.
  if (table.exact.size === 0 && table.suffixes.length === 0 && table.prefixes.length === 0) return table.any;
  const hit = findVirtualHostFor(table, authority);
  if (hit) return hit;
  const colon = authority.lastIndexOf(':');
  if (colon > 0 && authority.indexOf(']', colon) < 0) {
    const bare = findVirtualHostFor(table, authority.slice(0, colon));
    if (bare) return bare;
  }
  return table.any;
}

/** The first route of the matching virtual host that matches the request, or null. */
export function findRoute(
  table: RouteTable,
  req: HttpRequest,
): { vh: CompiledVirtualHost; route: CompiledRoute } | null {
  const vh = findVirtualHost(table, req.authority);
  if (!vh) return null;
  const q = req.path.indexOf('?');
  const pathNoQuery = q < 0 ? req.path : req.path.slice(0, q);
  for (const route of vh.routes) if (route.matches(req, pathNoQuery)) return { vh, route };
  return null;
}

/** Picks a weighted cluster with `random` in [0, 1). */
export function pickWeighted<T extends { weight: number }>(
  action: { clusters: T[]; totalWeight: number },
  random: number,
): T {
  let point = Math.floor(random * action.totalWeight);
  for (const c of action.clusters) {
    if (point < c.weight) return c;
    point -= c.weight;
  }
  return action.clusters[action.clusters.length - 1] as T;
}

/** The `Location` of a redirect route for this request. */
export function redirectLocation(
  action: Extract<RouteAction, { kind: 'redirect' }>,
  route: CompiledRoute,
  req: HttpRequest,
): string {
  const scheme = action.scheme ?? req.scheme;
  let host = action.host ?? req.authority;
  if (action.port) host = `${host.replace(/:\d+$/, '')}:${action.port}`;
  else if (action.scheme && action.scheme !== req.scheme) host = host.replace(/:\d+$/, '');
  const q = req.path.indexOf('?');
  let path = q < 0 ? req.path : req.path.slice(0, q);
  const query = q < 0 || action.stripQuery ? '' : req.path.slice(q);
  if (action.path !== null) path = action.path;
  else if (action.prefixRewrite !== null && route.prefix !== null)
    path = action.prefixRewrite + path.slice(route.prefix.length);
  return `${scheme}://${host}${path}${query}`;
}
