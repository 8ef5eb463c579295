import type * as net from 'node:net';
import type { Json } from '../../../events/config.js';
import { listOf, objectOf } from '../../../reducers/settings/values.js';
import { configTypeOf } from '../../bootstrap/extensions.js';
import type { Report } from '../../bootstrap/report.js';
import type { NetworkFilterHandler } from '../network-filter.js';
import type { ConnectionFilter, NetworkFilterDeps, NetworkFilterFactory } from './api.js';
import { networkExtAuthzFactory } from './ext-authz/index.js';
import { httpConnectionManagerFactory } from './http-connection-manager.js';
import { localRateLimitFactory } from './local-ratelimit/index.js';
import { networkRbacFactory } from './rbac.js';
import { mysqlProxyFactory } from './mysql-proxy/index.js';
import { postgresProxyFactory } from './postgres-proxy/index.js';
import { sniClusterFactory } from './sni-cluster/index.js';
import { tcpProxyFactory } from './tcp-proxy.js';

/**
 * Every network filter of this build, one factory each, found by its config message. Adding a
 * filter is its own file or folder here and one line in this list; the loader reads this list
 * (src/bootstrap/catalog.ts).
 */
export const NETWORK_FILTER_FACTORIES: readonly NetworkFilterFactory[] = [
  registered(httpConnectionManagerFactory),
  registered(tcpProxyFactory),
  registered(networkRbacFactory),
  registered(localRateLimitFactory),
  registered(sniClusterFactory),
  registered(networkExtAuthzFactory),
  registered(postgresProxyFactory),
  registered(mysqlProxyFactory),
];

/** A factory as the registry holds it: its config is only ever the one its own `compile` made. */
function registered<C>(factory: NetworkFilterFactory<C>): NetworkFilterFactory {
  return factory as unknown as NetworkFilterFactory;
}

const byType = new Map(NETWORK_FILTER_FACTORIES.map((f) => [f.configType, f]));

/** The factory of a config message, or undefined when this build has no such network filter. */
export function networkFilterFactory(configType: string): NetworkFilterFactory | undefined {
  return byType.get(configType);
}

/** One filter of a chain, compiled: its config message and what its factory's `compile` made. */
export interface CompiledNetworkFilter {
  configType: string;
  config: unknown;
}

/** A chain's `filters`, compiled: those that see each connection first, in order, then the terminal one. */
export interface ChainFilters {
  readFilters: CompiledNetworkFilter[];
  terminal: CompiledNetworkFilter;
}

/** The names of the filters that may end a chain, for messages. */
const TERMINAL_FILTERS = NETWORK_FILTER_FACTORIES.filter((f) => f.terminal)
  .map((f) => f.name)
  .join(' or ');

/**
 * Compiles a chain's `filters` (at `path`), each by the factory of its resolved `@type`: the
 * terminal one must come last and only there. Null when the chain has no terminal filter (the
 * reason is in the report).
 */
export function compileChainFilters(
  raw: Json | undefined,
  path: string,
  report: Report,
): ChainFilters | null {
  const filters = listOf(raw);
  if (filters.length === 0) {
    report.error(path, `is empty; end the chain with ${TERMINAL_FILTERS}`, 'missing');
    return null;
  }
  const readFilters: CompiledNetworkFilter[] = [];
  let terminal: CompiledNetworkFilter | null = null;
  filters.forEach((f, i) => {
    const at = `${path}[${i}]`;
    const configType = configTypeOf(f);
    const factory = byType.get(configType);
    // An unresolved name was reported by the loader, which resolves every extension.
    if (factory === undefined) return;
    const label = String(f.name ?? configType);
    const last = i === filters.length - 1;
    if (factory.terminal && !last) {
      report.error(at, `'${label}' is a terminal filter and must be the last of its chain`);
      return;
    }
    if (!factory.terminal && last) report.error(at, `'${label}' must be followed by ${TERMINAL_FILTERS}`);
    const config = factory.compile(objectOf(f.typed_config), `${at}.typed_config`, report);
    if (factory.terminal) terminal = { configType, config };
    else readFilters.push({ configType, config });
  });
  return terminal ? { readFilters, terminal } : null;
}

/**
 * The handler of a compiled chain, made when its listener binds: its read filters see each
 * connection in order, then the terminal one owns it.
 */
export function buildChain(filters: ChainFilters, deps: NetworkFilterDeps): NetworkFilterHandler {
  const terminal = byType.get(filters.terminal.configType);
  if (!terminal?.terminal) throw new Error(`${filters.terminal.configType} is not a terminal network filter`);
  const handler = terminal.build(filters.terminal.config, deps);
  const started: ConnectionFilter[] = filters.readFilters.map((f) => {
    const factory = byType.get(f.configType);
    if (factory === undefined || factory.terminal) throw new Error(`${f.configType} is not a read filter`);
    return factory.start(f.config, deps);
  });
  if (started.length === 0) return handler;
  // The connection holds its bytes while the read filters decide (one may ask a service), and
  // flows again as the terminal filter takes it, as the listener hands it over.
  const pass = (socket: net.Socket, from: number): void => {
    const filter = started[from];
    if (filter === undefined) {
      socket.resume();
      handler.handle(socket);
    } else
      filter.onNewConnection(socket, () => {
        if (!socket.destroyed) pass(socket, from + 1);
      });
  };
  return {
    handle: (socket) => {
      socket.pause();
      pass(socket, 0);
    },
    drain: (strategy, drainTimeMs) => handler.drain(strategy, drainTimeMs),
    close: () => handler.close(),
    connectionIdleMs: handler.connectionIdleMs,
  };
}
