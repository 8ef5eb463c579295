import type * as net from 'node:net';
import { FLAG, joinHostPort, newStreamInfo, type StreamInfo } from '../access-log/stream-info.js';
import { findRoute, pickWeighted } from '../router/lookup.js';
import type { CompiledRoute } from '../router/table.js';
import type { UpgradeTable } from '../router/upgrade-config.js';
import type { DownstreamOwner } from './downstream.js';
import { BodyFramer, responseFraming } from '../codec/h1-body.js';
import { ResponseHeadParser } from '../codec/h1-parse.js';
import type { ResponseHead } from '../codec/h1-head.js';
import { reasonPhrase } from '../codec/h1-status.js';
import { peerFault } from '../codec/peer-guard.js';
import { appendVia, applyEdge } from './edge.js';
import { downstreamResponseHeaders, upstreamRequestHead } from './headers.js';
import { applyHeaderMutations, type HeaderMutation } from '../router/header-mutation.js';
import type { UpstreamHost } from '../../upstream/types.js';
import { normalizeRequestPath } from './path-normalize.js';
import { RESET_DETAILS, upstreamResetText } from './local-reply.js';
import { StreamTimer, type TimerTarget } from './stream-timer.js';
import { destroyAfterDelayedClose } from './h1-lifetime.js';
import { requestFilters } from './filters/api.js';
import { runUpgradeFilters } from './upgrade-filters.js';
import type { HttpRequest } from '../codec/request.js';

/** Whether a request upgrading to `type` may go through: the route's setting, else the HCM's. */
function upgradeEnabled(hcm: UpgradeTable, route: CompiledRoute, type: string): boolean {
  if (!hcm.has(type)) return false;
  return route.upgrades?.get(type) ?? (hcm.get(type) as boolean);
}

/**
 * Ends the client's connection after what is written to it (`last`, if given). The socket,
 * paused since the upgrade request, is read again (its bytes dropped) so the client's close is
 * seen: paused, a client that closed was never noticed and its socket was held for ever.
 */
function endDownstream(downstream: net.Socket, delayedCloseMs: number, last?: string): void {
  if (downstream.writableEnded) return;
  downstream.unpipe();
  downstream.resume();
  if (last === undefined) downstream.end();
  else downstream.end(last, 'latin1');
  destroyAfterDelayedClose(downstream, delayedCloseMs);
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

/**
 * The head the client gets for the upstream's answer `head`, as any response's: hop-by-hop
 * fields and those its `Connection` names dropped, `server`, the service time, `via` and the
 * route's response mutations applied; a 101 keeps `connection: upgrade` and its `upgrade`, a
 * refusal keeps the framing its body is relayed in and closes. It was relayed as the upstream
 * wrote it, so the route's `response_headers_to_add` never reached a WebSocket client.
 */
function answerHead(
  hcm: DownstreamOwner,
  head: ResponseHead,
  serviceTime: string | null,
  mutations: readonly HeaderMutation[],
  ctx: { info: StreamInfo; host: UpstreamHost },
): string {
  const out = downstreamResponseHeaders(head.headers, hcm.serverName, serviceTime, hcm.spec.serverHeader);
  if (hcm.spec.edge.via) appendVia(out, hcm.spec.edge.via);
  if (mutations.length > 0) applyHeaderMutations(out, mutations, true, ctx);
  if (head.status === 101) {
    out.push('connection', 'upgrade');
    for (let i = 0; i < head.headers.length; i += 2)
      if (head.headers[i] === 'upgrade') out.push('upgrade', head.headers[i + 1] as string);
  } else {
    if (head.chunked) out.push('transfer-encoding', 'chunked');
    else if (head.contentLength >= 0) out.push('content-length', String(head.contentLength));
    out.push('connection', 'close');
  }
  let text = `HTTP/1.1 ${head.status} ${reasonPhrase(head.status)}\r\n`;
  for (let i = 0; i < out.length; i += 2) text += `${out[i]}: ${out[i + 1]}\r\n`;
  return `${text}\r\n`;
}

/**
 * The upstream's answer to an upgrade request, read as it arrives. The client's bytes go
 * upstream only once it switched protocols: before that the connection is still HTTP, and
 * bytes relayed after a refusal would be requests no route, filter or edge check ever saw (a
 * refused upgrade used to leave a raw tunnel open). Any other answer is the request's
 * response: relayed to the end of its framing, then both connections close.
 */
class UpgradeAnswer {
  /** The answer's status, 0 until its head is read. */
  status = 0;
  private readonly parser = new ResponseHeadParser();
  /** The refusal's body, read to its end, when the upstream answered other than 101. */
  private refusal: BodyFramer | null = null;
  /** The bytes of a head not yet whole. */
  private held: Buffer[] = [];
  /** The answer broke HTTP/1 (a malformed head): the client gets 502. */
  protocolError = false;

  constructor(
    private readonly upstream: net.Socket,
    private readonly downstream: net.Socket,
    /** Client bytes read after the upgrade request's head. */
    private readonly rest: Buffer[],
    private readonly method: string,
    private readonly info: StreamInfo,
    private readonly delayedCloseMs: number,
    /** The head the client gets for the upstream's. */
    private readonly rewrite: (head: ResponseHead) => string,
  ) {}

  get refused(): boolean {
    return this.refusal !== null;
  }

  /** The upstream's bytes until its answer is whole: a throw reading them ends this tunnel alone. */
  readonly onData = (chunk: Buffer): void => {
    try {
      this.read(chunk);
    } catch (err) {
      peerFault(err, 'upgrade answer read', this.upstream);
    }
  };

  private read(chunk: Buffer): void {
    const { upstream, downstream } = this;
    let from = 0;
    let off = 0;
    if (this.refusal === null) {
      let head: ResponseHead | null = null;
      // Heads are held until whole and accepted: a malformed one never reaches the client in
      // part, and 100 Continue and other interim answers are dropped, as the router drops them.
      while (head === null || (head.status < 200 && head.status !== 101)) {
        if (head !== null) {
          this.held = [];
          from = off;
          if (off === chunk.length) return;
        }
        head = this.parser.feed(chunk, off);
        off += this.parser.used;
        if (this.parser.error) {
          this.protocolError = true;
          upstream.destroy();
          return;
        }
        if (head === null) {
          this.held.push(chunk.subarray(from));
          return;
        }
      }
      this.status = head.status;
      this.info.details = 'via_upstream';
      this.held = [];
      this.relay([Buffer.from(this.rewrite(head), 'latin1')]);
      from = off;
      if (head.status === 101) {
        upstream.off('data', this.onData);
        this.relay([chunk.subarray(off)]);
        upstream.pipe(downstream);
        for (const c of this.rest) upstream.write(c);
        downstream.pipe(upstream);
        downstream.resume();
        return;
      }
      this.refusal = new BodyFramer(responseFraming(head, this.method), head.contentLength);
    }
    const refusal = this.refusal;
    const used = refusal.done ? 0 : refusal.feed(chunk, off, () => {});
    if (!this.relay([chunk.subarray(from, off + used)])) {
      upstream.pause();
      downstream.once('drain', () => upstream.resume());
    }
    if (refusal.done) {
      endDownstream(downstream, this.delayedCloseMs);
      upstream.destroy();
    }
  }

  /** Writes `parts` to the client, counting them; false when its buffer is full. */
  private relay(parts: Buffer[]): boolean {
    let ok = true;
    for (const part of parts) {
      this.info.bytesSent += part.length;
      ok = this.downstream.write(part);
    }
    return ok;
  }
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
  // An invalid path refuses the upgrade (the codec answers it); a valid one is routed normalized.
  if (!normalizeRequestPath(req, hcm.normalizePath, hcm.spec.mergeSlashes)) return false;
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
      (answer) => {
        const serviceTime = hcm.filters.router.suppressEnvoyHeaders
          ? null
          : String(Math.round(performance.now() - info.startedAt));
        return answerHead(hcm, answer, serviceTime, mutations, { info, host });
      },
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
