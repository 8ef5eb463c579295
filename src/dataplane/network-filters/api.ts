import type * as net from 'node:net';
import type { JsonObject } from '../../../events/config.js';
import type { ExtensionIdentity } from '../../bootstrap/extensions.js';
import type { FieldTable } from '../../bootstrap/honoured.js';
import type { Report } from '../../bootstrap/report.js';
import type { HttpConnectionManagerDeps } from '../http/types.js';
import type { WorkerSlice } from '../listeners/limits.js';
import type { NetworkFilterHandler } from '../network-filter.js';

/** What the listener manager gives each network filter of a chain it builds. */
export interface NetworkFilterDeps extends HttpConnectionManagerDeps {
  /** Which data-plane worker thread this is, for a filter that holds its share of a process-wide budget. */
  slice: WorkerSlice;
}

/**
 * A network filter before the terminal one, for one chain: it sees each new connection first
 * and either passes it on (`proceed`, at once or later) or closes it. The first that closes it
 * ends it; the terminal filter never sees it.
 */
export interface ConnectionFilter {
  onNewConnection(socket: net.Socket, proceed: () => void): void;
}

interface Common<C> extends ExtensionIdentity {
  /** The field tables `compile` checks against, by message name (docs/bootstrap.md). */
  fieldTables: Record<string, FieldTable>;
  /** The one compile step, shared by `--mode validate` and serving; refuses unknown fields by name. */
  compile(config: JsonObject, path: string, report: Report): C;
}

/** A filter that ends a chain: it owns each connection it is given (HCM, TCP proxy). */
export interface TerminalFilterFactory<C = unknown> extends Common<C> {
  terminal: true;
  /** The handler of one chain, built when its listener binds. */
  build(config: C, deps: NetworkFilterDeps): NetworkFilterHandler;
}

/** A filter that runs before the terminal one (RBAC, local rate limit). */
export interface ReadFilterFactory<C = unknown> extends Common<C> {
  terminal: false;
  /** The filter of one chain, made when its listener binds. */
  start(config: C, deps: NetworkFilterDeps): ConnectionFilter;
}

/**
 * One network filter extension: its identity (names, type URLs, schema; the loader reads them
 * from the registry), its compile step and what serves a chain with it. See docs/data-plane.md,
 * "Network and listener filters".
 */
export type NetworkFilterFactory<C = unknown> = TerminalFilterFactory<C> | ReadFilterFactory<C>;
