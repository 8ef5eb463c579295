import { createHttpConnectionManager } from '../http/types.js';
import type { HttpConnectionManagerDeps, NetworkFilterHandler } from '../http/types.js';
import { parseTcpProxy } from '../tcp/config.js';
import { createTcpProxy } from '../tcp/proxy.js';
import type { NetworkFilterSpec } from './config.js';

export type FilterBuild = { ok: true; handler: NetworkFilterHandler } | { ok: false; error: string };

/** Builds the handler of a chain's terminal filter; a config the filter rejects is an error result. */
export function buildNetworkFilter(spec: NetworkFilterSpec, deps: HttpConnectionManagerDeps): FilterBuild {
  if (spec.kind === 'tcp_proxy') {
    const parsed = parseTcpProxy(spec.config, spec.where);
    if (!parsed.ok) return parsed;
    return { ok: true, handler: createTcpProxy(parsed.settings, deps) };
  }
  try {
    return { ok: true, handler: createHttpConnectionManager(spec.config, deps) };
  } catch (err) {
    return { ok: false, error: `${spec.where}: ${(err as Error).message}` };
  }
}
