/**
 * grpc-js for the management streams: the module, loaded on first use, and the credentials of
 * a dial (plain text, or TLS secured by `secureSocket`).
 */
import { createRequire } from 'node:module';
import type * as net from 'node:net';
import type * as Grpc from '@grpc/grpc-js';
import type { KeepaliveOptions } from '../../dataplane/codec/h2/keepalive.js';
import { type ManagementTls, secureSocket } from './management-tls.js';

let grpcModule: typeof Grpc | null = null;

/**
 * `@grpc/grpc-js`, loaded on the first dial rather than imported: a server whose config
 * names no gRPC management server never holds it (about 2.7 MB of heap).
 */
export function grpc(): typeof Grpc {
  grpcModule ??= createRequire(import.meta.url)('@grpc/grpc-js') as typeof Grpc;
  return grpcModule;
}

/**
 * grpc-js credentials for a management server: plain text, or connections secured and their
 * peer checked by `secureSocket` (grpc-js's own TLS would check the host name instead).
 */
export function channelCredentials(management: ManagementTls | null): Grpc.ChannelCredentials {
  const { CallCredentials, ChannelCredentials, credentials } = grpc();
  if (!management) return credentials.createInsecure();
  const secured: ManagementTls = management;
  class PeerChecked extends ChannelCredentials {
    _isSecure(): boolean {
      return true;
    }
    _equals(other: Grpc.ChannelCredentials): boolean {
      return other === this;
    }
    _createSecureConnector(
      ...[, , call]: Parameters<Grpc.ChannelCredentials['_createSecureConnector']>
    ): ReturnType<Grpc.ChannelCredentials['_createSecureConnector']> {
      return {
        connect: async (socket: net.Socket) => ({
          socket: await secureSocket(socket, secured, 'h2'),
          secure: true,
        }),
        waitForReady: () => Promise.resolve(),
        getCallCredentials: () => call ?? CallCredentials.createEmpty(),
        destroy: () => {},
      };
    }
  }
  return new PeerChecked();
}

/**
 * The channel options of a dial. No limit on a response's size, as the reference's
 * `envoy_grpc` sets none by default: grpc-js's 4 MiB would refuse an ordinary large CDS push
 * and retry it for ever. The cluster's `connection_keepalive` becomes grpc-js's PINGs: every
 * `interval` (its jitter drawn once per dial, as grpc-js keeps one period), the connection
 * dropped when an ACK takes longer than `timeout`, idle or not; `connection_idle_interval` has
 * no new stream to go before on a channel that carries one stream for its life.
 */
export function channelOptions(keepalive: KeepaliveOptions | null): Grpc.ChannelOptions {
  const options: Grpc.ChannelOptions = { 'grpc.max_receive_message_length': -1 };
  if (!keepalive || keepalive.intervalMs <= 0) return options;
  const interval = keepalive.intervalMs + Math.random() * keepalive.intervalMs * keepalive.jitter;
  options['grpc.keepalive_time_ms'] = Math.round(interval);
  options['grpc.keepalive_timeout_ms'] = keepalive.timeoutMs;
  options['grpc.keepalive_permit_without_calls'] = 1;
  return options;
}
