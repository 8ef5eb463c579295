/**
 * The ways resources arrive, one per source: a watched file, a REST poller, or a gRPC stream
 * (state of the world or delta; the ADS stream shared by every `ads` source, else one per
 * management cluster and kind). It counts `control_plane.*` for the gRPC ones.
 */

import type { JsonObject } from '../../../events/config.js';
import { entryOf } from '../../../reducers/index.js';
import type { ConfigSourceSpec, GrpcSource } from '../../config/config-source.js';
import type { Store } from '../../control/store.js';
import type { Loggers } from '../../logging/loggers.js';
import type { StatsStore } from '../../stats/store.js';
import { DeltaStream } from './delta-stream.js';
import { FileSource } from './file-source.js';
import { grpcTarget, type StreamOptions } from './grpc-stream.js';
import { managementSecurity } from './management-tls.js';
import { RestPoller } from './rest-source.js';
import { XdsStream } from './stream.js';
import { DELTA_METHODS, METHODS, type ResourceKind, type Transport } from './types.js';
import { nodeMessage } from './wire.js';

export class Transports {
  private readonly streams = new Map<string, Transport>();
  /** The gRPC streams up now, for `control_plane.connected_state`. */
  private readonly connected = new Set<Transport>();
  /** Per management cluster: how many dials it had, so each picks its next member. */
  private readonly picks = new Map<string, number>();
  private readonly connectedState;
  private readonly counters;
  private readonly node: Record<string, unknown>;

  constructor(
    private readonly store: Store,
    private readonly stats: StatsStore,
    private readonly log: ReturnType<Loggers['get']>,
    /** The ADS stream's source (`dynamic_resources.ads_config`); null without one. */
    private readonly ads: GrpcSource | null,
    /** The node as proto3 JSON (REST); the gRPC encoder takes it rebuilt. */
    private readonly nodeJson: JsonObject,
  ) {
    this.node = nodeMessage(nodeJson);
    this.connectedState = stats.gauge('control_plane.connected_state', 'NeverImport');
    this.counters = {
      rateLimitEnforced: stats.counter('control_plane.rate_limit_enforced'),
      pendingRequests: stats.gauge('control_plane.pending_requests', 'NeverImport'),
    };
  }

  /** The gRPC server of a source: its own, or the ADS one. */
  private grpcOf(source: ConfigSourceSpec): GrpcSource | null {
    if (source.kind === 'ads') return this.ads;
    return source.kind === 'grpc' ? source.grpc : null;
  }

  /** Where a source's resources arrive: its file, the ADS stream, or its cluster's stream of the kind. */
  keyOf(kind: ResourceKind, source: ConfigSourceSpec): string | null {
    if (source.kind === 'path') return `file:${source.path}`;
    if (source.kind === 'rest') return `rest:${source.rest.cluster}|${source.rest.transport}`;
    const grpc = this.grpcOf(source);
    if (!grpc) return null;
    const protocol = grpc.delta ? 'delta' : 'sotw';
    return source.kind === 'ads'
      ? `ads|${protocol}`
      : `${grpc.cluster}|${grpc.transport}|${protocol}|${kind}`;
  }

  /** Whether a source's resources come as deltas (subscriptions by name, changes only). */
  isDelta(source: ConfigSourceSpec): boolean {
    return this.grpcOf(source)?.delta === true;
  }

  /** The management server to dial: the next member of its static cluster. */
  private targetOf(cluster: string): string | null {
    const hosts = entryOf(this.store.state.clusters, cluster)?.hosts ?? [];
    if (hosts.length === 0) return null;
    const n = this.picks.get(cluster) ?? 0;
    this.picks.set(cluster, n + 1);
    return grpcTarget(hosts[n % hosts.length]!);
  }

  /** The transport of a source for `kind`, made on first use; null when it has none (no ADS). */
  streamFor(kind: ResourceKind, source: ConfigSourceSpec): Transport | null {
    const key = this.keyOf(kind, source);
    if (key === null) return null;
    const stream = this.streams.get(key) ?? this.create(kind, source);
    if (stream) this.streams.set(key, stream);
    return stream ?? null;
  }

  private create(kind: ResourceKind, source: ConfigSourceSpec): Transport | undefined {
    if (source.kind === 'path') return new FileSource(source.path, this.log, source.watchedDirectory);
    if (source.kind === 'rest') {
      const cluster = source.rest.cluster;
      return new RestPoller(
        source.rest,
        () => this.targetOf(cluster),
        () => managementSecurity(this.store.state, this.stats, cluster),
        this.nodeJson,
        this.log,
      );
    }
    const grpc = this.grpcOf(source);
    if (!grpc) return undefined;
    const methods = grpc.delta ? DELTA_METHODS : METHODS;
    const options: StreamOptions = {
      method: methods[grpc.transport][source.kind === 'ads' ? 'ads' : kind],
      target: () => this.targetOf(grpc.cluster),
      security: () => managementSecurity(this.store.state, this.stats, grpc.cluster),
      node: this.node,
      nodeOnFirstOnly: grpc.nodeOnFirstOnly,
      rateLimit: grpc.rateLimit,
      metadata: grpc.metadata,
      counters: this.counters,
      log: this.log,
      onConnected: (up) => {
        if (up) this.connected.add(stream);
        else this.connected.delete(stream);
        this.connectedState.set(this.connected.size > 0 ? 1 : 0);
      },
    };
    const stream: Transport = grpc.delta
      ? new DeltaStream(options, grpc.transport === 'V3')
      : new XdsStream(options);
    return stream;
  }

  /** Closes every transport not in `used`. */
  closeUnused(used: ReadonlySet<Transport>): void {
    for (const [key, stream] of this.streams) {
      if (used.has(stream)) continue;
      stream.close();
      this.streams.delete(key);
      this.connected.delete(stream);
    }
  }

  close(): void {
    for (const stream of this.streams.values()) stream.close();
    this.streams.clear();
  }
}
