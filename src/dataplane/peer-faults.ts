import type { ServerContext } from '../context-core.js';
import { setPeerFaultSink } from './codec/peer-guard.js';

/**
 * Sends what this thread's peer-input guards catch (`codec/peer-guard.ts`) to its stats
 * (`server.envoy_bug_failures`) and its `envoy_bug` logger: the primary's edges (health checks,
 * xDS) set it first, each data plane on its thread.
 */
export function reportPeerFaults(ctx: Pick<ServerContext, 'stats' | 'log'>): void {
  const bugs = ctx.stats.counter('server.envoy_bug_failures');
  const log = ctx.log.get('envoy_bug');
  setPeerFaultSink({
    count: () => bugs.inc(),
    log: (err, where, notLogged) =>
      log.error(
        { err, where, notLogged },
        `exception on ${where} input: only what it came on failed (closed, or NACKed), the process serves on`,
      ),
  });
}
