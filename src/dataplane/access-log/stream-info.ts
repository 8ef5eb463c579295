import type { Json } from '../../../events/config.js';
import { hostKey } from '../../../reducers/settings/endpoints.js';
import type { HttpRequest } from '../codec/request.js';

/**
 * The reference's response flags, in the order its logs print them. The bit of each flag is
 * its index here, so a set of flags is one number on the hot path.
 */
export const RESPONSE_FLAGS = [
  'LH',
  'UH',
  'UT',
  'LR',
  'UR',
  'UF',
  'UC',
  'UO',
  'NR',
  'DI',
  'FI',
  'RL',
  'UAEX',
  'RLSE',
  'DC',
  'URX',
  'SI',
  'IH',
  'DPE',
  'UPE',
] as const;

export type ResponseFlag = (typeof RESPONSE_FLAGS)[number];

/** The bit of each flag, `FLAG.UH` etc. */
export const FLAG = Object.fromEntries(RESPONSE_FLAGS.map((f, i) => [f, 1 << i])) as Record<
  ResponseFlag,
  number
>;

/** `UH,UF` for a set of flags; `-` when none is set, as the reference prints it. */
export function flagsText(flags: number): string {
  if (flags === 0) return '-';
  let out = '';
  for (let i = 0; i < RESPONSE_FLAGS.length; i++)
    if (flags & (1 << i)) out = out ? `${out},${RESPONSE_FLAGS[i]}` : (RESPONSE_FLAGS[i] as string);
  return out;
}

/**
 * What one HTTP exchange or TCP session did, kept as it happens and read once at its end by
 * the access logs: plain data, no behaviour.
 */
export interface StreamInfo {
  /** Wall-clock start, ms since the epoch (`%START_TIME%`). */
  startTime: number;
  /** Monotonic start (`performance.now()`), for the durations. */
  startedAt: number;
  /** Monotonic time of the first upstream response byte; 0 when none came. */
  firstUpstreamByteAt: number;
  /** Monotonic end; 0 until the stream is over. */
  endedAt: number;
  /** The downstream request; null for a TCP session. */
  request: HttpRequest | null;
  /**
   * `%PROTOCOL%` of an HTTP stream whose request was never parsed (its codec's own answer: a
   * 431, a 400), as the reference logs its codec's protocol; null otherwise.
   */
  codecProtocol: string | null;
  /** Response status sent downstream; 0 when none was (a reset, a TCP session). */
  responseCode: number;
  /** The body of the proxy's own reply before `local_reply_config` formats it (`%LOCAL_REPLY_BODY%`); '' when none. */
  localReplyBody: string;
  /** Response headers as sent downstream (flat, names lowercase); null before a response. */
  responseHeaders: string[] | null;
  /** `RESPONSE_FLAGS` bits. */
  flags: number;
  /**
   * Why the response is what it is, in the reference's words (`%RESPONSE_CODE_DETAILS%`):
   * `via_upstream`, `route_not_found`, ...; one string constant per reason, '' when none is known.
   */
  details: string;
  /** Body bytes received from the downstream (all bytes for TCP). */
  bytesReceived: number;
  /** Body bytes sent to the downstream (all bytes for TCP). */
  bytesSent: number;
  /** `ip:port` of the last upstream host tried; '' when none. */
  upstreamHost: string;
  /**
   * `ip:port` of the local end of the upstream connection that carried the last try
   * (`%UPSTREAM_LOCAL_ADDRESS%`); '' before one was connected, or over a unix socket.
   */
  upstreamLocal: string;
  upstreamCluster: string;
  /**
   * The client's address (`ip:port`): the peer's, or (HTTP) the one the edge step read from
   * `x-forwarded-for`, with port 0, as the reference logs it.
   */
  downstreamRemote: string;
  /** `ip:port` of the downstream peer and of the local end of its connection. */
  downstreamDirectRemote: string;
  downstreamLocal: string;
  routeName: string;
  /** `x-request-id`-style marker that a request was answered by the health check filter. */
  healthCheck: boolean;
  /**
   * What filters recorded for later filters and the access logs (`%DYNAMIC_METADATA(NS:KEY)%`),
   * by namespace (the filter's name, as the reference's); null until one does.
   */
  dynamicMetadata: Record<string, Record<string, Json>> | null;
  /** Named objects filters share with later ones (`%FILTER_STATE(KEY)%`); null until one is set. */
  filterState: Map<string, FilterStateEntry> | null;
}

/** One filter state object; a read-only one cannot be replaced, as the reference's. */
export interface FilterStateEntry {
  value: Json;
  readOnly: boolean;
}

/** Merges `values` into the dynamic metadata namespace `ns`, as the reference's `setDynamicMetadata`. */
export function setDynamicMetadata(info: StreamInfo, ns: string, values: Record<string, Json>): void {
  info.dynamicMetadata ??= {};
  info.dynamicMetadata[ns] = { ...info.dynamicMetadata[ns], ...values };
}

/** Sets the filter state object `name`; throws when a read-only one already holds the name. */
export function setFilterState(info: StreamInfo, name: string, value: Json, readOnly = false): void {
  info.filterState ??= new Map();
  const state = info.filterState;
  if (state.get(name)?.readOnly) throw new Error(`filter state '${name}' is read-only`);
  state.set(name, { value, readOnly });
}

/** A fresh record for a stream starting now. */
export function newStreamInfo(request: HttpRequest | null, remote: string, local: string): StreamInfo {
  return {
    startTime: Date.now(),
    startedAt: performance.now(),
    firstUpstreamByteAt: 0,
    endedAt: 0,
    request,
    codecProtocol: null,
    responseCode: 0,
    localReplyBody: '',
    responseHeaders: null,
    flags: 0,
    details: '',
    bytesReceived: 0,
    bytesSent: 0,
    upstreamHost: '',
    upstreamLocal: '',
    upstreamCluster: '',
    downstreamRemote: remote,
    downstreamDirectRemote: remote,
    downstreamLocal: local,
    routeName: '',
    healthCheck: false,
    dynamicMetadata: null,
    filterState: null,
  };
}

/** `ip:port`, with IPv6 addresses bracketed and IPv4-mapped ones unwrapped. */
export function joinHostPort(ip: string | undefined, port: number | undefined): string {
  if (!ip) return '';
  const bare = ip.replace(/^::ffff:/, '');
  return hostKey(bare, port ?? 0);
}
