import type { StreamInfo } from '../access-log/stream-info.js';
import type { HttpRequest } from '../codec/request.js';
import { findRoute } from '../router/lookup.js';
import type { RouteTable } from '../router/table.js';
import type { StreamFilter } from './filters/api.js';
import type { ChainRouter, FilterChainEnds } from './filters/chain-ends.js';
import { overrideOf, type RouteHit } from './filters/router/route.js';
import { FilterRunner } from './filters/runner.js';

/** What an upgrade does once its filters decided. */
export interface UpgradeOutcome {
  /** Every filter passed the head: the tunnel opens. */
  pass(): void;
  /** A filter answered the upgrade itself (its head past the encoders): the answer is written and the request ends. */
  reply(status: number, body: string, headers: string[]): void;
}

/** The filters' hold on an upgrade, for its downstream's close. */
export interface UpgradeChain {
  /** The downstream closed: true when the filters still held the head (the request then ends unanswered). */
  abandon(): boolean;
}

/** An upgrade's head has no body and no response the filters see: only its head goes through. */
const NOTHING = (): void => {};

/**
 * Runs the per-request filters on an HTTP/1.1 upgrade's head (src/dataplane/http/upgrade.ts),
 * whose bytes never pass through them: the router's end opens the tunnel, a filter's answer is
 * written in its place. A filter may hold the head (an authorization call) before passing it.
 */
export function runUpgradeFilters(
  filters: StreamFilter[],
  routes: RouteTable,
  req: HttpRequest,
  info: StreamInfo,
  admitted: RouteHit,
  outcome: UpgradeOutcome,
): UpgradeChain {
  let done = false;
  let hit: RouteHit | null = admitted;
  const router: ChainRouter = {
    get hit() {
      return hit;
    },
    get routeCluster() {
      const action = hit?.route.action;
      return action?.kind === 'cluster' ? action.cluster : null;
    },
    perRoute: (type, name) => overrideOf(hit, type, name),
    // The tunnel keeps the route it was admitted on; filters after this one read the new one.
    clearRouteCache: () => {
      hit = findRoute(routes, req);
    },
    decodeHeaders: () => {
      finish();
      outcome.pass();
    },
    decodeData: NOTHING,
    decodeTrailers: NOTHING,
  };
  const ends: FilterChainEnds = {
    req,
    info,
    get ended() {
      return done;
    },
    router,
    sendLocalReply(status, body, headers = []) {
      if (done) return;
      runner.encodeLocalHeaders(status, headers);
      finish();
      outcome.reply(status, body, headers);
    },
    bufferLimit: Number.MAX_SAFE_INTEGER,
    // No response passes these filters: a tunnel's bytes never do.
    responseLength: -1,
    encodedHeaders: NOTHING,
    encodedData: NOTHING,
    encodedTrailers: NOTHING,
    decodeWatermark: NOTHING,
    encodeWatermark: NOTHING,
    decodeTooLarge: NOTHING,
    encodeTooLarge: NOTHING,
  };
  const runner = new FilterRunner(filters, ends);
  const finish = (): void => {
    done = true;
    runner.destroy();
  };
  runner.decodeHeaders();
  return {
    abandon() {
      if (done) return false;
      finish();
      return true;
    },
  };
}
