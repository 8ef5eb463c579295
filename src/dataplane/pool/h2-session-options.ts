import type { Http2Options } from '../../config/h2-options.js';
import { RESPONSE_LIMITS } from '../codec/h1-head.js';
import type { SessionOptions } from '../codec/h2/connection.js';
import { DEFAULT_WINDOW } from '../codec/h2/frames.js';
import { DEFAULT_FLOOD_LIMITS } from '../codec/h2/limits.js';

/**
 * The codec's options for an upstream HTTP/2 session (the pools' and the health checks'): what
 * the cluster's `http2_protocol_options` sets (SETTINGS, windows, flood limits), response heads held to the HTTP/1 pool's limits
 * (the reference's 80 KiB and 100 fields), and a malformed response ending the whole connection
 * unless the cluster's `stream_error_on_invalid_http_messaging` (or its override) says only its stream.
 */
export function upstreamSessionOptions(options: Http2Options | null): SessionOptions {
  const settings = options?.settings ?? {};
  return {
    headerTableSize: settings.headerTableSize ?? 4096,
    maxConcurrentStreams: settings.maxConcurrentStreams ?? null,
    initialWindowSize: settings.initialWindowSize ?? DEFAULT_WINDOW,
    connectionWindowSize: options?.connectionWindowSize ?? DEFAULT_WINDOW,
    maxHeaderListSize: RESPONSE_LIMITS.maxHeadBytes,
    maxHeadersCount: RESPONSE_LIMITS.maxHeadersCount,
    streamErrorOnInvalidMessaging: options?.streamErrorOnInvalidMessaging ?? false,
    limits: options?.limits ?? DEFAULT_FLOOD_LIMITS,
    keepalive: options?.keepalive ?? null,
  };
}
