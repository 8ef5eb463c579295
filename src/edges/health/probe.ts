import type * as net from 'node:net';
import type { HealthCheckResult } from '../../../views/clusters/figures.js';
import type { HttpCheckSettings } from '../../config/health.js';
import { newStreamInfo } from '../../dataplane/access-log/stream-info.js';
import type { ConnectOptions } from '../../dataplane/pool/connect-options.js';
import { applyHeaderMutations } from '../../dataplane/router/header-mutation.js';
import type { Scope } from '../../stats/store.js';
import { dial } from '../../tls/upstream.js';

/**
 * The verdict of one check: `success`; `degraded`, a pass whose answer said the host is
 * degraded; `active`, the host answered and the answer is a failure (a status outside the
 * expected ones, NOT_SERVING): the reference takes the host out at once; `network`, no answer
 * (refused, reset, closed, timed out): it counts toward `unhealthy_threshold`.
 */
export type CheckResult = HealthCheckResult;

/** Where a probe connects, and the cluster name that stands in for an unset host or authority. */
export interface ProbeTarget {
  ip: string;
  port: number;
  /** `ip` is a unix socket's path. */
  pipe?: boolean;
  cluster: string;
  /** The cluster's bind, keep-alive and TLS settings: checks connect as its traffic does. */
  connect: ConnectOptions;
  /** `cluster.<name>.`, for the `ssl.` counters of TLS checks. */
  scope: Scope;
  /** Bumped when an HTTP check verifies `service_name` (the `verify_cluster` stat). */
  onVerifyCluster(): void;
}

/** Opens a check connection like the cluster's own; `onReady` once bytes may flow (after TLS). */
export function connectTo(target: ProbeTarget, http2: boolean, onReady?: () => void): net.Socket {
  const o = target.connect;
  return dial(
    {
      ip: target.ip,
      port: target.port,
      pipe: target.pipe === true,
      localAddress: o.localAddress,
      localPort: o.localPort,
      keepAlive: o.keepAlive,
      keepAliveInitialDelayMs: o.keepAliveInitialDelayMs,
      tls: o.tls,
      scope: target.scope,
      http2,
    },
    onReady,
  );
}

/** One checker's connection to one host: a check at a time, the session times it out. */
export interface Probe {
  check(): Promise<CheckResult>;
  /** Drops the connection: after a timeout, with `reuse_connection` false, and at stop. */
  close(): void;
}

export const USER_AGENT = 'proxy/HC';

/**
 * What a check holds of an answer it reads whole (a TCP check's bytes, a gRPC check's body):
 * the reference's per-connection buffer default. A peer sending more without the answer
 * looked for fails the check (a TCP check used to grow one buffer without end, copying it at
 * every read on the main thread).
 */
export const MAX_ANSWER_BYTES = 1024 * 1024;
/** The response header an upstream proxy sets to name the cluster it health-checked for. */
export const HEALTHCHECKED_CLUSTER = 'x-proxy-upstream-healthchecked-cluster';
/** A passing answer with this header marks the host degraded (`/degraded_active_hc`). */
export const DEGRADED = 'x-proxy-degraded';

export function authorityOf(target: ProbeTarget, configured: string): string {
  return configured || target.cluster;
}

/** The reference's health checker evaluates header variables on a loopback connection of its own. */
const CHECK_ADDRESS = '127.0.0.1:0';

/**
 * The request headers of an HTTP check beyond the pseudo-headers (flat, names lowercase),
 * `request_headers_to_remove` then `_add` applied as the router applies them. Evaluated per
 * check, as a value may read the time.
 */
export function checkHeaders(settings: HttpCheckSettings): string[] {
  const headers = ['user-agent', USER_AGENT];
  if (settings.headers) {
    const info = newStreamInfo(null, CHECK_ADDRESS, CHECK_ADDRESS);
    applyHeaderMutations(headers, [settings.headers], false, { info, host: null });
  }
  return headers;
}

export function statusPasses(settings: HttpCheckSettings, status: number): boolean {
  return settings.expectedStatuses.some(([start, end]) => status >= start && status < end);
}

/** The verdict of an HTTP answer: expected status, and the cluster identity when `service_name` is set. */
export function httpVerdict(
  settings: HttpCheckSettings,
  target: ProbeTarget,
  status: number,
  clusterHeader: string | string[] | undefined,
  degraded: boolean,
): CheckResult {
  if (!statusPasses(settings, status)) return 'active';
  if (settings.serviceName) {
    target.onVerifyCluster();
    const value = Array.isArray(clusterHeader) ? clusterHeader[0] : clusterHeader;
    if (!(value ?? '').startsWith(settings.serviceName)) return 'active';
  }
  return degraded ? 'degraded' : 'success';
}

/** The first value of `name` in a flat header list. */
export function headerOf(headers: readonly string[], name: string): string | undefined {
  for (let i = 0; i < headers.length; i += 2) if (headers[i] === name) return headers[i + 1];
  return undefined;
}

/**
 * What the raw-socket probes share: the connection kept between checks, and the check
 * waiting for its verdict, settled once.
 */
export abstract class SocketProbe implements Probe {
  protected socket: net.Socket | null = null;
  protected pending: ((result: CheckResult) => void) | null = null;

  abstract check(): Promise<CheckResult>;

  protected settle(result: CheckResult): void {
    const pending = this.pending;
    this.pending = null;
    pending?.(result);
  }

  close(): void {
    const socket = this.socket;
    this.socket = null;
    socket?.destroy();
  }
}
