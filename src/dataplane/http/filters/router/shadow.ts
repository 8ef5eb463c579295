/**
 * The copies of one request its route's mirror policies ask for (src/dataplane/router/
 * mirror.ts): each policy's cluster gets the request as it goes upstream, its host suffixed
 * `-shadow`, once the body is whole. Fire and forget, as the reference's: the answer is read
 * and dropped, the shadow cluster's stats count it, and nothing of it reaches the client.
 */
import type { StreamInfo } from '../../../access-log/stream-info.js';
import { type HttpRequest, headerValue } from '../../../codec/request.js';
import type { ClusterLookup } from '../../../pool/cluster-traffic.js';
import type { UpstreamRequestHead } from '../../../pool/types.js';
import { applyHeaderMutations } from '../../../router/header-mutation.js';
import { type MirrorPolicy, shadowAuthority } from '../../../router/mirror.js';
import type { CompiledRoute } from '../../../router/table.js';
import type { DownstreamOwner } from '../../downstream.js';
import { fractionEnabled, randomDraw, type RuntimeLookup } from '../../runtime-fraction.js';
import { callCluster } from '../cluster-call.js';

/** The request the copies are of (the router filter's stream). */
interface ShadowStream {
  readonly hcm: DownstreamOwner;
  readonly req: HttpRequest;
  readonly info: StreamInfo;
}

/** What the copies need of the request and its connection manager. */
interface ShadowContext {
  clusters: ClusterLookup;
  runtime: RuntimeLookup;
  /** The most body bytes kept for the copies; a longer body sends none. */
  limit: number;
}

/** One request's copies, waiting for the end of its body. */
export class Shadows {
  private readonly chunks: Buffer[] = [];
  private bytes = 0;
  private over = false;
  private sent = false;

  private constructor(
    private readonly ctx: ShadowContext,
    private readonly targets: string[],
    private readonly heads: UpstreamRequestHead[],
    private readonly timeoutMs: number,
  ) {}

  /**
   * The copies a routed request makes (each policy's cluster, when it exists and the request
   * falls in its share), or null for none. `head` is the request as it goes upstream.
   */
  static start(
    stream: ShadowStream,
    route: CompiledRoute,
    policies: readonly MirrorPolicy[],
    head: UpstreamRequestHead,
    timeoutMs: number,
  ): Shadows | null {
    const hcm = stream.hcm;
    const ctx: ShadowContext = {
      clusters: hcm.deps.clusters,
      runtime: hcm.runtime,
      limit: hcm.deps.bufferLimitBytes ?? 1024 * 1024,
    };
    const targets: string[] = [];
    const heads: UpstreamRequestHead[] = [];
    for (const policy of policies) {
      const cluster =
        policy.cluster ??
        headerValue(stream.req, policy.clusterHeader as string)
          ?.split(',')[0]
          ?.trim();
      // As the reference: no copy for a header that names nothing, or a cluster this proxy lacks.
      if (!cluster || !ctx.clusters.get(cluster)) continue;
      if (!fractionEnabled(policy.fraction, ctx.runtime, randomDraw())) continue;
      const headers = head.headers.slice();
      if (route.mutations.length > 0)
        applyHeaderMutations(headers, route.mutations, false, { info: stream.info, host: null });
      targets.push(cluster);
      heads.push({
        ...head,
        headers,
        authority: policy.suffix ? shadowAuthority(head.authority) : head.authority,
        // The copy's body goes whole: its length is known when it goes.
        trailers: false,
      });
    }
    if (targets.length === 0) return null;
    const shadows = new Shadows(ctx, targets, heads, timeoutMs);
    if (!stream.req.hasBody) shadows.end(stream);
    return shadows;
  }

  /** A piece of the request body, kept for the copies while it fits the buffer limit. */
  data(chunk: Buffer): void {
    if (this.over || this.sent) return;
    this.bytes += chunk.length;
    if (this.bytes > this.ctx.limit) {
      this.over = true;
      this.chunks.length = 0;
    } else this.chunks.push(chunk);
  }

  /** The body is whole: the copies go. A body past the buffer limit sends none. */
  end(stream: ShadowStream): void {
    if (this.sent) return;
    this.sent = true;
    if (this.over) {
      stream.hcm.log.debug({ targets: this.targets }, 'request body too large to mirror');
      return;
    }
    const body = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks);
    this.chunks.length = 0;
    this.targets.forEach((cluster, i) => {
      const head = this.heads[i] as UpstreamRequestHead;
      callCluster(
        this.ctx.clusters,
        {
          cluster,
          method: head.method,
          path: head.path,
          authority: head.authority,
          headers: head.headers,
          body,
          timeoutMs: this.timeoutMs,
          http2: stream.req.protocol === 'HTTP/2',
        },
        // Fire and forget: the shadow cluster's own stats say how it went.
        () => {},
      );
    });
  }
}
