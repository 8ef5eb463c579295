import type { Json, JsonObject } from '../../../events/config.js';
import { listOf, objectOf } from '../../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable } from '../../bootstrap/honoured.js';
import { attempt, fault, Report } from '../../bootstrap/report.js';
import type { StreamInfo } from '../access-log/stream-info.js';
import type { HttpRequest } from '../codec/request.js';
import { compileHeaderMatcher, type RequestTest } from '../router/matchers.js';
import { CONTINUE, type FilterStatus, type FilterStream, type StreamFilter } from './filters/api.js';
import type { TapMatch, TapRegistry, TapSession } from './tap-registry.js';

/** The reference's default for `max_buffered_rx_bytes` and `max_buffered_tx_bytes`. */
const DEFAULT_MAX_BUFFERED = 1024;

const TAP_FIELDS: FieldTable = acting('common_config');
const COMMON_FIELDS: FieldTable = {
  admin_config: 'act',
  static_config: {
    refuse: 'static_config (file sinks) is not supported by this build; use admin_config and POST /tap',
  },
};

/** The field tables of the tap filter's compile step, by message name. */
export const TAP_FIELD_TABLES = { Tap: TAP_FIELDS, CommonExtensionConfig: COMMON_FIELDS };

/** Compiles the tap filter's config (`envoy.filters.http.tap`) to its admin config id. */
export function compileTapFilter(config: JsonObject, where: string, report: Report): string | null {
  checkFields(config, where, report, TAP_FIELDS, 'Tap');
  const common = objectOf(config.common_config);
  checkFields(common, `${where}.common_config`, report, COMMON_FIELDS, 'CommonExtensionConfig');
  if (common.static_config !== undefined) return null;
  const id = objectOf(common.admin_config).config_id;
  if (typeof id !== 'string' || id === '') {
    report.error(
      `${where}.common_config.admin_config.config_id`,
      'the tap filter needs a config_id',
      'missing',
    );
    return null;
  }
  return id;
}

const TAP_CONFIG_FIELDS: FieldTable = {
  ...acting('match_config', 'output_config'),
  tap_enabled: { refuse: 'tap_enabled (runtime sampling of taps) is not supported by this build' },
};
const OUTPUT_FIELDS: FieldTable = {
  ...acting('sinks', 'max_buffered_rx_bytes', 'max_buffered_tx_bytes'),
  streaming: { refuse: 'streaming (per-chunk traces) is not supported by this build: traces are buffered' },
};
const SINK_FIELDS: FieldTable = {
  ...acting('streaming_admin', 'format'),
  file_per_tap: { refuse: 'a /tap session streams to the admin client only (streaming_admin)' },
  streaming_grpc: { refuse: 'a /tap session streams to the admin client only (streaming_admin)' },
};
const PREDICATE_FIELDS: FieldTable = {
  ...acting('or_match', 'and_match', 'not_match', 'any_match'),
  ...acting('http_request_headers_match', 'http_response_headers_match'),
  http_request_trailers_match: { refuse: 'trailers are not matched by this build' },
  http_response_trailers_match: { refuse: 'trailers are not matched by this build' },
};

/** A header list seen through `HttpRequest`, so the route's header matchers test a response. */
function responseView(headers: string[], protocol: HttpRequest['protocol']): HttpRequest {
  return {
    method: '',
    path: '',
    authority: '',
    scheme: '',
    headers,
    protocol,
    remoteIp: '',
    contentLength: -1,
    hasBody: false,
  };
}

function compileHeaders(raw: Json | undefined, where: string): RequestTest[] {
  return listOf(objectOf(raw).headers).map((h, i) => compileHeaderMatcher(h, `${where}.headers[${i}]`));
}

/** `MatchPredicate`: exactly one rule, compiled to a test over request and response. */
function compilePredicate(raw: JsonObject, where: string, report: Report): TapMatch {
  checkFields(raw, where, report, PREDICATE_FIELDS, 'MatchPredicate');
  const rules = Object.keys(raw);
  if (rules.length !== 1) throw fault(where, 'a match predicate needs exactly one rule', 'invalid');
  const rule = rules[0] as string;
  const at = `${where}.${rule}`;
  const set = (): TapMatch[] =>
    listOf(objectOf(raw[rule]).rules).map((r, i) => compilePredicate(r, `${at}.rules[${i}]`, report));
  switch (rule) {
    case 'any_match':
      if (raw.any_match !== true) throw fault(at, 'any_match must be true', 'invalid');
      return () => true;
    case 'or_match': {
      const all = set();
      return (req, res) => all.some((m) => m(req, res));
    }
    case 'and_match': {
      const all = set();
      return (req, res) => all.every((m) => m(req, res));
    }
    case 'not_match': {
      const inner = compilePredicate(objectOf(raw.not_match), at, report);
      return (req, res) => !inner(req, res);
    }
    case 'http_request_headers_match': {
      const tests = compileHeaders(raw[rule], at);
      return (req) => tests.every((t) => t(req));
    }
    case 'http_response_headers_match': {
      const tests = compileHeaders(raw[rule], at);
      return (_req, res) => tests.every((t) => t(res));
    }
    default:
      return () => false;
  }
}

/** A `/tap` request body (`TapRequest`), checked: its config id and the session it asks for. */
export function compileTapRequest(
  body: JsonObject,
  report: Report,
): { configId: string; session: Omit<TapSession, 'emit'> } | null {
  checkFields(body, '', report, acting('config_id', 'tap_config'), 'TapRequest');
  const configId = body.config_id;
  if (typeof configId !== 'string' || configId === '') {
    report.error('config_id', 'a TapRequest needs a config_id', 'missing');
    return null;
  }
  const tap = objectOf(body.tap_config);
  checkFields(tap, 'tap_config', report, TAP_CONFIG_FIELDS, 'TapConfig');
  let match: TapMatch | undefined;
  if (tap.match_config === undefined) report.error('tap_config.match_config', 'required', 'missing');
  else
    match = attempt(report, 'tap_config.match_config', () =>
      compilePredicate(objectOf(tap.match_config), 'tap_config.match_config', report),
    );
  const output = objectOf(tap.output_config);
  checkFields(output, 'tap_config.output_config', report, OUTPUT_FIELDS, 'OutputConfig');
  const sinks = listOf(output.sinks);
  if (sinks.length !== 1)
    report.error(
      'tap_config.output_config.sinks',
      'a /tap session takes exactly one sink (streaming_admin)',
      'invalid',
    );
  const sink = sinks[0] ?? {};
  checkFields(sink, 'tap_config.output_config.sinks[0]', report, SINK_FIELDS, 'OutputSink');
  const format = sink.format ?? 'JSON_BODY_AS_BYTES';
  if (format !== 'JSON_BODY_AS_BYTES' && format !== 'JSON_BODY_AS_STRING')
    report.error(
      'tap_config.output_config.sinks[0].format',
      `streaming_admin writes JSON: format must be JSON_BODY_AS_BYTES or JSON_BODY_AS_STRING, not ${String(format)}`,
      'invalid',
    );
  if (sinks.length === 1 && sink.streaming_admin === undefined && !report.failed)
    report.error('tap_config.output_config.sinks[0]', 'the sink must be streaming_admin', 'missing');
  if (!match || report.failed) return null;
  const limit = (v: unknown): number => (v === undefined ? DEFAULT_MAX_BUFFERED : Number(v));
  return {
    configId,
    session: {
      match,
      maxRxBytes: limit(output.max_buffered_rx_bytes),
      maxTxBytes: limit(output.max_buffered_tx_bytes),
      bodyAsString: format === 'JSON_BODY_AS_STRING',
    },
  };
}

/** Body bytes kept up to a limit; `truncated` once more came. */
class BoundedBody {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  truncated = false;

  constructor(private readonly limit: number) {}

  add(chunk: Buffer): void {
    const room = this.limit - this.kept;
    if (chunk.length > room) this.truncated = true;
    if (room <= 0) return;
    const piece = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.chunks.push(piece);
    this.kept += piece.length;
  }

  toJson(asString: boolean): JsonObject | undefined {
    if (this.kept === 0 && !this.truncated) return undefined;
    const bytes = Buffer.concat(this.chunks);
    return asString
      ? { as_string: bytes.toString('utf8'), truncated: this.truncated }
      : { as_bytes: bytes.toString('base64'), truncated: this.truncated };
  }
}

function headerList(flat: readonly string[], into: JsonObject[]): JsonObject[] {
  for (let i = 0; i < flat.length; i += 2)
    into.push({ key: flat[i] as string, value: flat[i + 1] as string });
  return into;
}

/**
 * The tap filter of one request recorded for an attached session: the request and response
 * bodies as they pass its place in the chain, up to the session's limits; when the request is
 * over, the match decides whether its trace (`http_buffered_trace`) is sent.
 */
export class TapRecorder implements StreamFilter {
  private readonly rx: BoundedBody;
  private readonly tx: BoundedBody;
  private info: StreamInfo | null = null;

  constructor(private readonly session: TapSession) {
    this.rx = new BoundedBody(session.maxRxBytes);
    this.tx = new BoundedBody(session.maxTxBytes);
  }

  decodeHeaders(stream: FilterStream): FilterStatus {
    this.info = stream.info;
    return CONTINUE;
  }

  decodeData(_stream: FilterStream, chunk: Buffer): FilterStatus {
    this.rx.add(chunk);
    return CONTINUE;
  }

  encodeData(_stream: FilterStream, chunk: Buffer): FilterStatus {
    this.tx.add(chunk);
    return CONTINUE;
  }

  /** The request is over: the trace goes to the session when the match holds. */
  onDestroy(): void {
    const info = this.info;
    const req = info?.request;
    if (!info || !req) return;
    const responseHeaders = info.responseHeaders ?? [];
    if (!this.session.match(req, responseView(responseHeaders, req.protocol))) return;
    const asString = this.session.bodyAsString;
    const request: JsonObject = {
      headers: headerList(req.headers, [
        { key: ':authority', value: req.authority },
        { key: ':path', value: req.path },
        { key: ':method', value: req.method },
        { key: ':scheme', value: req.scheme },
      ]),
    };
    const requestBody = this.rx.toJson(asString);
    if (requestBody) request.body = requestBody;
    const response: JsonObject = {};
    if (info.responseCode > 0)
      response.headers = headerList(responseHeaders, [{ key: ':status', value: String(info.responseCode) }]);
    const responseBody = this.tx.toJson(asString);
    if (responseBody) response.body = responseBody;
    this.session.emit({ http_buffered_trace: { request, response } });
  }
}

/**
 * A worker's side of `/tap`: attaches the session `request` (a TapRequest body, checked by
 * the primary already) asks for, sending its traces with `emit`, or detaches it when null.
 * Returns whether this process has a tap filter with `configId` (it attaches only then).
 */
export function applyTapQuery(
  taps: TapRegistry,
  configId: string,
  request: JsonObject | null,
  emit: (trace: JsonObject) => void,
): boolean {
  if (request === null) taps.sessions.delete(configId);
  if (request === null || !taps.hasFilter(configId)) return taps.hasFilter(configId);
  const compiled = compileTapRequest(request, new Report('/tap'));
  if (compiled) taps.sessions.set(configId, { ...compiled.session, emit });
  return compiled !== null;
}
