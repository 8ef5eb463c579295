import type bunyan from 'bunyan';
import type { StreamInfo } from '../access-log/stream-info.js';
import type { RuntimeLookup } from '../access-log/filters.js';
import type { ServerSession } from '../codec/h2/session.js';
import type { RouteTable } from '../router/table.js';
import type { HttpTracer } from '../tracing/tracer.js';
import type { StreamFilterMaker } from './filters/api.js';
import type { FilterChain } from './filters/chain.js';
import type { HcmSpec } from './hcm-config.js';
import type { ForwardingOptions } from './headers.js';
import type { HcmStats } from './stats.js';
import type { HcmTimeouts } from './timeouts.js';
import type { HttpConnectionManagerDeps } from './types.js';

/**
 * What the downstream codecs (HTTP/1, HTTP/2) and each exchange use of the connection
 * manager that owns them. `HttpConnectionManager` implements it; they name this rather than
 * the class, so the manager creates them without an import circle.
 */
export interface DownstreamOwner extends ForwardingOptions {
  readonly spec: HcmSpec;
  readonly deps: HttpConnectionManagerDeps;
  readonly stats: HcmStats;
  /** The route table a new request reads (a discovered one is swapped whole by RDS). */
  readonly routes: RouteTable;
  readonly filters: FilterChain;
  /** One maker per per-request filter (src/dataplane/http/filters/api.ts); null for none. */
  readonly streamFilters: StreamFilterMaker[] | null;
  /** HCM `tracing` with a tracer (its provider or the bootstrap's), or null: no spans. */
  readonly tracer: HttpTracer | null;
  readonly log: bunyan;
  /** Runtime values by key, read per request (`local_reply_config`'s filters). */
  readonly runtime: RuntimeLookup;
  readonly serverName: string;
  /** The proxy's own address, appended to `x-forwarded-for` for a loopback peer. */
  readonly localAddress: string;
  readonly maxRequestHeadersBytes: number;
  /** `normalize_path` as decided for this connection manager (its runtime default resolved). */
  readonly normalizePath: boolean;
  readonly timeouts: HcmTimeouts;
  readonly draining: boolean;
  /** While draining, whether this response should close its connection. */
  shouldDrainClose(): boolean;
  /** Bookkeeping when a downstream connection is gone (`conn`: the HTTP/1 connection, if one). */
  onConnectionClosed(conn: object | null, openedAt: number, h2: boolean): void;
  /** Called once by each exchange when it is over. */
  onStreamEnd(info: StreamInfo): void;
  /** Called by the HTTP/2 codec for each new session, so drains can send it GOAWAY. */
  trackSession(session: ServerSession): void;
}
