import type * as net from 'node:net';
import { FLAG, joinHostPort, newStreamInfo, type StreamInfo } from '../access-log/stream-info.js';
import { findRoute, pickWeighted } from '../router/lookup.js';
import type { CompiledRoute } from '../router/table.js';
import type { UpgradeTable } from '../router/upgrade-config.js';
import type { DownstreamOwner } from './downstream.js';
import { reasonPhrase } from '../codec/h1-status.js';
import { applyEdge } from './edge.js';
import { upstreamRequestHead } from './headers.js';
import { applyHeaderMutations } from '../router/header-mutation.js';
import { answerHead, endDownstream, UpgradeAnswer } from './upgrade-answer.js';
import { normalizeRequestPath } from './path-normalize.js';
import { RESET_DETAILS, upstreamResetText } from './local-reply.js';
import { StreamTimer, type TimerTarget } from './stream-timer.js';
import { requestFilters } from './filters/api.js';
import { runUpgradeFilters } from './upgrade-filters.js';
import type { HttpRequest } from '../codec/request.js';
import { localEnd } from '../pool/local-end.js';

/** Whether a request upgrading to `type` may go through: the route's setting, else the HCM's. */
function upgradeEnabled(hcm: UpgradeTable, route: CompiledRoute, type: string): boolean {
  if (!hcm.has(type)) return false;
  return route.upgrades?.get(type) ?? (hcm.get(type) as boolean);
}

/** Counts and logs the upgrade's request once it ended with `status` (0: none). */
function finishRequest(hcm: DownstreamOwner, info: StreamInfo, status: number): void {
  const s = hcm.stats;
  s.rqActive.dec();
  if (status > 0) {
    s.rqClasses[Math.floor(status / 100) - 1]?.inc();
    s.rqCompleted.inc();
  }
  info.responseCode = status;
  hcm.onStreamEnd(info);
}

/** A local answer's response flag and `%RESPONSE_CODE_DETAILS%`. */
type Why = readonly [flag: number, details: string];

/** The client's answer when the upstream gave none: its status, text and why. */
function failureReply(protocolError: boolean, timedOut: number): [number, string, Why] {
  if (protocolError)
    return [502, upstreamResetText('protocol error'), [FLAG.UPE, RESET_DETAILS['protocol error'] as string]];
  if (timedOut === 408) return [408, 'stream timeout', [0, 'stream_idle_timeout']];
  if (timedOut === 504) return [504, 'upstream request timeout', [0, 'response_timeout']];
  return [
    503,
    upstreamResetText('connection failure'),
    [FLAG.UF, RESET_DETAILS['connection failure'] as string],
  ];
}

/** The proxy's own answer to an upgrade request, which closes the connection. */
function localAnswer(status: number, text: string, server: string, headers: readonly string[]): string {
  let extra = '';
  for (let i = 0; i < headers.length; i += 2) extra += `${headers[i]}: ${headers[i + 1]}\r\n`;
  return `HTTP/1.1 ${status} ${reasonPhrase(status)}\r\ncontent-length: ${text.length}\r\ncontent-type: text/plain\r\nserver: ${server}\r\n${extra}connection: close\r\n\r\n${text}`;
}

const ROUTE_TIMEOUT = 0;
const IDLE_TIMEOUT = 1;

/**
 * An upgrade's timeouts, as the reference applies them to an upgraded stream: the route's
 * `timeout` until the upstream answers, and the stream idle timeout (the route's `idle_timeout`,
 * else the HCM's `stream_idle_timeout`) over the whole tunnel, restarted by a byte either way.
 * Without them a silent upstream or an idle tunnel held both connections for ever.
 */
class UpgradeTimers implements TimerTarget {
  private readonly route = new StreamTimer();
  private readonly idle = new StreamTimer();

  constructor(
    routeMs: number,
    idleMs: number,
    private readonly fire: (idle: boolean) => void,
  ) {
    if (routeMs > 0) this.route.arm(routeMs, this, ROUTE_TIMEOUT);
    if (idleMs > 0) this.idle.arm(idleMs, this, IDLE_TIMEOUT);
  }

  traffic(): void {
    this.idle.refresh();
  }

  answered(): void {
    this.route.close();
  }

  stop(): void {
    this.route.close();
    this.idle.close();
  }

  onTimer(kind: number): void {
    this.stop();
    this.fire(kind === IDLE_TIMEOUT);
  }
}

/**
 * An HTTP/1.1 upgrade (WebSocket) through the router: the request head goes to a host of the
 * route's cluster with its `connection: upgrade` and `upgrade` headers (plus the usual
 * forwarding headers and rewrites). Once the upstream answers `101 Switching Protocols`, bytes
 * are relayed both ways unchanged until either side closes; any other answer is relayed to its
 * end as the request's response, and the connection closes without a byte more going upstream.
 * Returns false, taking nothing, when the HCM or the route does not enable this upgrade
 * type; the codec then refuses it.
 */
export function startUpgrade(
  hcm: DownstreamOwner,
  downstream: net.Socket,
  req: HttpRequest,
  upgrade: string,
  rest: Buffer[],
): boolean {
  // An invalid path, or one to redirect, refuses the upgrade (the codec answers it); a valid one is routed normalized.
  if (normalizeRequestPath(req, hcm.normalizePath, hcm.spec.mergeSlashes, hcm.spec.escapedSlashes) !== 'ok') return false;
  const routes = hcm.routes;
  applyEdge(req, hcm.spec.edge, hcm.localAddress, routes.internalOnlyHeaders);
  const hit = findRoute(routes, req);
  const type = upgrade.split(',')[0]?.trim().toLowerCase() ?? '';
  if (!hit || !upgradeEnabled(hcm.spec.upgrades, hit.route, type)) return false;
  const route = hit.route;
  const action = route.action;
  if (action.kind !== 'cluster' && action.kind !== 'weighted') return false;
  const target = action.kind === 'weighted' ? pickWeighted(action, Math.random()) : null;
  const s = hcm.stats;
  const info = newStreamInfo(req, joinHostPort(req.remoteIp, req.remotePort), req.localAddress ?? '');
  info.routeName = route.name;
  s.rqTotal.inc();
  s.rqHttp1Total.inc();
  s.rqActive.inc();
  s.routerRqTotal.inc();
  let ended = false;
  const end = (status: number) => {
    if (ended) return;
    ended = true;
    finishRequest(hcm, info, status);
  };
  const reply = (status: number, text: string, [flag, details]: Why, headers: readonly string[] = []) => {
    info.flags |= flag;
    info.details = details;
    const bytes = localAnswer(status, text, hcm.serverName, headers);
    endDownstream(downstream, hcm.timeouts.delayedCloseMs, bytes);
    end(status);
  };
  const tunnel = (): void => {
    const clusterName = target?.name ?? (action.kind === 'cluster' ? action.cluster : '');
    const cluster = hcm.deps.clusters.get(clusterName);
    if (!cluster) {
      s.noCluster.inc();
      reply(route.clusterNotFoundStatus, '', [FLAG.NR, 'cluster_not_found']);
      return;
    }
    info.upstreamCluster = clusterName;
    const { traffic } = cluster;
    // As the router does: a full breaker is an overflow (UO), not a missing host.
    if (!traffic.admitRequest(route.priority)) {
      reply(503, upstreamResetText('overflow'), [FLAG.UO, RESET_DETAILS.overflow as string]);
      return;
    }
    const host = cluster.lb.choose({
      hash: route.hash?.(req) ?? null,
      attempt: 0,
      criteria: target?.criteria ?? route.criteria,
    });
    if (!host) {
      traffic.cxNoneHealthy.inc();
      reply(503, 'no healthy upstream', [FLAG.UH, 'no_healthy_upstream']);
      return;
    }
    info.upstreamHost = host.address;
    const request = traffic.beginRequest(host, route.priority);
    const connection = traffic.beginConnection(host, 'http1');
    s.cxUpgradesTotal.inc();
    s.cxUpgradesActive.inc();
    const head = upstreamRequestHead(req, route, hcm);
    const mutations = target?.mutations ?? route.mutations;
    if (mutations.length > 0) applyHeaderMutations(head.headers, mutations, false, { info, host });
    let text = `${head.method} ${head.path} HTTP/1.1\r\nhost: ${head.authority}\r\n`;
    for (let i = 0; i < head.headers.length; i += 2) text += `${head.headers[i]}: ${head.headers[i + 1]}\r\n`;
    text += `connection: upgrade\r\nupgrade: ${upgrade}\r\n\r\n`;
    downstream.pause();
    const upstream = traffic.connector.connect(host, {
      onReady: () => {
        connection.connected();
        info.upstreamLocal = localEnd(upstream);
        upstream.write(text, 'latin1');
      },
    });
    const answer = new UpgradeAnswer(
      upstream,
      downstream,
      rest,
      req.method,
      info,
      hcm.timeouts.delayedCloseMs,
      (answer) => answerHead(hcm, answer, mutations, { info, host }),
    );
    const idleMs = route.idleTimeoutMs ?? hcm.timeouts.streamIdleMs;
    const timers = new UpgradeTimers(route.timeoutMs, idleMs, (idle) => {
      (idle ? s.rqIdleTimeout : traffic.rqTimeout).inc();
      info.flags |= idle ? FLAG.SI : FLAG.UT;
      close(idle ? 408 : 504);
    });
    upstream.on('data', answer.onData);
    upstream.on('data', () => {
      timers.traffic();
      if (answer.status !== 0) timers.answered();
    });
    downstream.on('data', (chunk: Buffer) => {
      timers.traffic();
      info.bytesReceived += chunk.length;
    });
    let closed = false;
    /** Ends the tunnel; `timedOut`: the status of the timeout that ended it (408, 504), else 0. */
    const close = (timedOut = 0) => {
      if (closed) return;
      closed = true;
      timers.stop();
      s.cxUpgradesActive.dec();
      connection.end();
      const status = answer.status;
      request.end(status);
      upstream.destroy();
      if (status === 0 && info.bytesSent === 0 && !downstream.destroyed) {
        // Nothing came back: the client gets the router's answer, and the socket closes after it.
        downstream.unpipe(upstream);
        if (answer.protocolError) traffic.cxProtocolError.inc();
        reply(...failureReply(answer.protocolError, timedOut));
        return;
      }
      end(status);
      // A refusal's answer may still be on its way out: the socket closes once it is written.
      if (answer.refused) endDownstream(downstream, hcm.timeouts.delayedCloseMs);
      else downstream.destroy();
    };
    upstream.on('close', () => close());
    upstream.on('error', () => {});
    downstream.on('close', () => close());
  };
  // The per-request filters see the upgrade's head as any other request's (the CSRF filter
  // refuses an upgrading POST from another origin); one that answers it ends it, and the
  // tunnel opens once every filter passed it, the downstream held until then.
  const filters = hcm.streamFilters === null ? null : requestFilters(hcm.streamFilters);
  if (filters === null) tunnel();
  else {
    downstream.pause();
    const chain = runUpgradeFilters(filters, routes, req, info, hit, {
      pass: tunnel,
      reply: (status, body, headers) => reply(status, body, [0, info.details], headers),
    });
    downstream.once('close', () => {
      if (chain.abandon()) end(0);
    });
  }
  return true;
}
