import type { JsonObject } from '../../../events/config.js';
import { checkFields, type FieldTable, notYet } from '../../bootstrap/honoured.js';
import type { Report } from '../../bootstrap/report.js';

/**
 * A connection manager's `http_protocol_options` (`Http1ProtocolOptions`) and its
 * `stream_error_on_invalid_http_message`: what the downstream HTTP/1 codec accepts and what
 * an invalid request costs, with the reference's semantics
 * (docs/edge.md#http1-http_protocol_options-and-invalid-messages).
 */
export interface Http1Settings {
  /** `accept_http_10`: without it an HTTP/1.0 (or 0.9) request is answered 426 Upgrade Required. */
  acceptHttp10: boolean;
  /** `default_host_for_http_10`: the Host of an HTTP/1.0 request that has none ('' for none). */
  defaultHostForHttp10: string;
  /** `allow_absolute_url` (default true): `GET http://host/path`; false: the target is a path, and not `/`-led ones get 404. */
  allowAbsoluteUrl: boolean;
  /**
   * Whether a request the connection manager answers 400 (an invalid message) leaves the
   * HTTP/1 connection open: `override_stream_error_on_invalid_http_message`, else the HCM's
   * `stream_error_on_invalid_http_message`, else false (the connection closes after the 400).
   */
  streamErrorOnInvalidMessage: boolean;
}

export const HTTP1_SETTINGS_FIELDS: FieldTable = {
  allow_absolute_url: 'act',
  accept_http_10: 'act',
  default_host_for_http_10: 'act',
  override_stream_error_on_invalid_http_message: 'act',
  header_key_format: notYet('header_key_format (response header case)'),
  enable_trailers: notYet('enable_trailers (HTTP/1.1 trailers)'),
  allow_chunked_length: notYet(
    'allow_chunked_length (a request with both Content-Length and Transfer-Encoding is refused)',
  ),
};

/** A BoolValue of the canonical config (a bare boolean); undefined when unset. */
const boolValue = (value: unknown): boolean | undefined => (typeof value === 'boolean' ? value : undefined);

/** Compiles `http_protocol_options` (`options`, at `path`) with the HCM's `stream_error_on_invalid_http_message`. */
export function compileHttp1Settings(
  options: JsonObject,
  hcmStreamError: unknown,
  path: string,
  report: Report,
): Http1Settings {
  checkFields(options, path, report, HTTP1_SETTINGS_FIELDS, 'Http1ProtocolOptions');
  const acceptHttp10 = options.accept_http_10 === true;
  const defaultHost =
    typeof options.default_host_for_http_10 === 'string' ? options.default_host_for_http_10 : '';
  if (defaultHost && !acceptHttp10)
    report.warn(`${path}.default_host_for_http_10`, 'has no effect: accept_http_10 is not true');
  return {
    acceptHttp10,
    defaultHostForHttp10: acceptHttp10 ? defaultHost.toLowerCase() : '',
    allowAbsoluteUrl: boolValue(options.allow_absolute_url) ?? true,
    streamErrorOnInvalidMessage:
      boolValue(options.override_stream_error_on_invalid_http_message) ?? boolValue(hcmStreamError) ?? false,
  };
}

/**
 * Whether an invalid HTTP/2 request resets its stream only: the options' own
 * `override_stream_error_on_invalid_http_message`, else the HCM's
 * `stream_error_on_invalid_http_message`, else the deprecated `stream_error_on_invalid_http_messaging`.
 */
export function http2StreamError(h2Options: JsonObject, hcmStreamError: unknown): boolean {
  return (
    boolValue(h2Options.override_stream_error_on_invalid_http_message) ??
    boolValue(hcmStreamError) ??
    h2Options.stream_error_on_invalid_http_messaging === true
  );
}
