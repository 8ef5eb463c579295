/**
 * The upstream's answer to an upgrade request (`upgrade.ts`): read until its head is whole,
 * then written to the client as any response's head; a 101 opens the tunnel, any other answer
 * is relayed to the end of its framing.
 */
import type * as net from 'node:net';
import type { StreamInfo } from '../access-log/stream-info.js';
import type { UpstreamHost } from '../../upstream/types.js';
import { BodyFramer, responseFraming } from '../codec/h1-body.js';
import type { ResponseHead } from '../codec/h1-head.js';
import { ResponseHeadParser } from '../codec/h1-parse.js';
import { reasonPhrase } from '../codec/h1-status.js';
import { peerFault } from '../codec/peer-guard.js';
import { applyHeaderMutations, type HeaderMutation } from '../router/header-mutation.js';
import type { DownstreamOwner } from './downstream.js';
import { appendVia } from './edge.js';
import { destroyAfterDelayedClose } from './h1-lifetime.js';
import { downstreamResponseHeaders } from './headers.js';

/**
 * Ends the client's connection after what is written to it (`last`, if given). The socket,
 * paused since the upgrade request, is read again (its bytes dropped) so the client's close is
 * seen: paused, a client that closed was never noticed and its socket was held for ever.
 */
export function endDownstream(downstream: net.Socket, delayedCloseMs: number, last?: string): void {
  if (downstream.writableEnded) return;
  downstream.unpipe();
  downstream.resume();
  if (last === undefined) downstream.end();
  else downstream.end(last, 'latin1');
  destroyAfterDelayedClose(downstream, delayedCloseMs);
}

/**
 * The head the client gets for the upstream's answer `head`, as any response's: hop-by-hop
 * fields and those its `Connection` names dropped, `server`, the service time, `via` and the
 * route's response mutations applied; a 101 keeps `connection: upgrade` and its `upgrade`, a
 * refusal keeps the framing its body is relayed in and closes. It was relayed as the upstream
 * wrote it, so the route's `response_headers_to_add` never reached a WebSocket client.
 */
export function answerHead(
  hcm: DownstreamOwner,
  head: ResponseHead,
  mutations: readonly HeaderMutation[],
  ctx: { info: StreamInfo; host: UpstreamHost },
): string {
  const serviceTime = hcm.filters.router.suppressEnvoyHeaders
    ? null
    : String(Math.round(performance.now() - ctx.info.startedAt));
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
export class UpgradeAnswer {
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
