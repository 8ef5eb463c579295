import type * as net from 'node:net';
import { FLAG, joinHostPort, newStreamInfo } from '../access-log/stream-info.js';
import { findRoute, pickWeighted } from '../router/lookup.js';
import type { CompiledRoute } from '../router/table.js';
import type { UpgradeTable } from '../router/upgrade-config.js';
import type { DownstreamOwner } from './downstream.js';
import { reasonPhrase } from '../codec/h1-status.js';
import { applyEdge } from './edge.js';
import { upstreamRequestHead } from './headers.js';
import { normalizeRequestPath } from './path-normalize.js';
import { upstreamResetText } from './local-reply.js';
import { runUpgradeFilters } from './upgrade-filters.js';
import type { HttpRequest } from '../codec/request.js';

/** Whether a request upgrading to `type` may go through: the route's setting, else the HCM's. */
function upgradeEnabled(hcm: UpgradeTable, route: CompiledRoute, type: string): boolean {
  if (!hcm.has(type)) return false;
  return route.upgrades?.get(type) ?? (hcm.get(type) as boolean);
}

const HEAD_END = Buffer.from('\r\n\r\n');

/**
 * An HTTP/1.1 upgrade (WebSocket) through the router: the request head goes to a host of the
 * route's cluster with its `connection: upgrade` and `upgrade` headers (plus the usual
 * forwarding headers and rewrites), and from then on bytes are relayed both ways unchanged,
 * the upstream's `101 Switching Protocols` (or refusal) included, until either side closes.
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
    s.rqActive.dec();
    if (status > 0) {
      s.rqClasses[Math.floor(status / 100) - 1]?.inc();
      s.rqCompleted.inc();
    }
    info.responseCode = status;
    hcm.onStreamEnd(info);
  };
  const reply = (status: number, text: string, flag: number, headers: readonly string[] = []) => {
    info.flags |= flag;
    let extra = '';
    for (let i = 0; i < headers.length; i += 2) extra += `${headers[i]}: ${headers[i + 1]}\r\n`;
    downstream.end(
      `HTTP/1.1 ${status} ${reasonPhrase(status)}\r\ncontent-length: ${text.length}\r\ncontent-type: text/plain\r\nserver: ${hcm.serverName}\r\n${extra}connection: close\r\n\r\n${text}`,
    );
    end(status);
  };
  const tunnel = (): void => {
    const clusterName = target?.name ?? (action.kind === 'cluster' ? action.cluster : '');
    const cluster = hcm.deps.clusters.get(clusterName);
    if (!cluster) {
      s.noCluster.inc();
      reply(route.clusterNotFoundStatus, '', FLAG.NR);
      return;
    }
    info.upstreamCluster = clusterName;
    const { traffic } = cluster;
    // As the router does: a full breaker is an overflow (UO), not a missing host.
    if (!traffic.admitRequest(route.priority)) {
      reply(503, upstreamResetText('overflow'), FLAG.UO);
      return;
    }
    const host = cluster.lb.choose({
      hash: route.hash?.(req) ?? null,
      attempt: 0,
      criteria: target?.criteria ?? route.criteria,
    });
    if (!host) {
      traffic.cxNoneHealthy.inc();
      reply(503, 'no healthy upstream', FLAG.UH);
      return;
    }
    info.upstreamHost = host.address;
    const request = traffic.beginRequest(host, route.priority);
    const connection = traffic.beginConnection(host, 'http1');
    s.cxUpgradesTotal.inc();
    s.cxUpgradesActive.inc();
    const head = upstreamRequestHead(req, route, hcm);
    let text = `${head.method} ${head.path} HTTP/1.1\r\nhost: ${head.authority}\r\n`;
    for (let i = 0; i < head.headers.length; i += 2) text += `${head.headers[i]}: ${head.headers[i + 1]}\r\n`;
    text += `connection: upgrade\r\nupgrade: ${upgrade}\r\n\r\n`;
    downstream.pause();
    let status = 0;
    let responseHead: Buffer | null = Buffer.alloc(0);
    const upstream = traffic.connector.connect(host, {
      onReady: () => {
        connection.connected();
        upstream.write(text, 'latin1');
        for (const chunk of rest) upstream.write(chunk);
        downstream.pipe(upstream);
        downstream.resume();
      },
    });
    upstream.on('data', (chunk: Buffer) => {
      info.bytesSent += chunk.length;
      if (responseHead === null) return;
      // The status of the upstream's answer, for the stats and the access log; bytes pass unchanged.
      responseHead = Buffer.concat([responseHead, chunk]);
      const line = /^HTTP\/1\.[01] (\d{3})/.exec(responseHead.subarray(0, 16).toString('latin1'));
      if (line || responseHead.indexOf(HEAD_END) >= 0 || responseHead.length > 16) {
        status = line ? Number(line[1]) : 0;
        responseHead = null;
      }
    });
    upstream.pipe(downstream);
    downstream.on('data', (chunk: Buffer) => {
      info.bytesReceived += chunk.length;
    });
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      s.cxUpgradesActive.dec();
      connection.end();
      request.end(status);
      upstream.destroy();
      if (status === 0 && info.bytesSent === 0 && !downstream.destroyed) {
        // Nothing came back: the client gets the router's answer, and the socket closes after it.
        downstream.unpipe(upstream);
        reply(503, upstreamResetText('connection failure'), FLAG.UF);
        return;
      }
      end(status);
      downstream.destroy();
    };
    upstream.on('close', close);
    upstream.on('error', () => {});
    downstream.on('close', close);
  };
  // The per-request filters see the upgrade's head as any other request's (the CSRF filter
  // refuses an upgrading POST from another origin); one that answers it ends it, and the
  // tunnel opens once every filter passed it, the downstream held until then.
  if (hcm.streamFilters === null) tunnel();
  else {
    downstream.pause();
    const chain = runUpgradeFilters(hcm.streamFilters, routes, req, info, hit, {
      pass: tunnel,
      reply: (status, body, headers) => reply(status, body, 0, headers),
    });
    downstream.once('close', () => {
      if (chain.abandon()) end(0);
    });
  }
  return true;
}
