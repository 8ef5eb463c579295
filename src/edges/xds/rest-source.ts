import { isUtf8 } from 'node:buffer';
import type { ClientRequestArgs } from 'node:http';
import * as net from 'node:net';
import type { Duplex } from 'node:stream';
import type bunyan from 'bunyan';
import type { JsonObject } from '../../../events/config.js';
import { parseJsonText } from '../../bootstrap/sources.js';
import type { RestSource } from '../../config/config-source.js';
import { http } from '../../node-http.js';
import { type ManagementSecurity, type ManagementTls, secureSocket } from './management-tls.js';
import { connectOptionsOf } from './settings-probe.js';
import { kindOfTypeUrl, type ResourceKind, type Subscriber, type Transport } from './types.js';

/** The REST path of each kind: `POST /v2/discovery:clusters` and so on. */
const PATHS: Record<ResourceKind, string> = {
  cds: 'clusters',
  eds: 'endpoints',
  lds: 'listeners',
  rds: 'routes',
  sds: 'secrets',
};

/**
 * The most a response body may hold, the reference's async client limit (32 MiB, its
 * `http.async_response_buffer_limit`): past it the fetch fails. Without it a server could
 * stream for the whole `request_timeout` into memory (about 200 MB a second over loopback).
 */
export const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

interface Poll {
  typeUrl: string;
  names: string[] | null;
  version: string;
  nonce: string;
  error: string | null;
  subscriber: Subscriber;
  timer: NodeJS.Timeout | null;
}

/**
 * An agent whose new connections are secured and their peer checked (`secureSocket`) when a
 * management cluster has TLS: its own connect would be plain text.
 */
class ManagementAgent extends http.Agent {
  tls: ManagementTls | null = null;

  override createConnection(
    options: ClientRequestArgs,
    done?: (err: Error | null, stream: Duplex) => void,
  ): Duplex | null | undefined {
    const raw = net.connect(options as net.NetConnectOpts);
    const tls = this.tls;
    if (!tls) return raw;
    raw.once('error', (err) => done?.(err, raw));
    raw.once('connect', () =>
      secureSocket(raw, tls, 'http/1.1').then(
        (secured) => done?.(null, secured),
        (err: Error) => done?.(err, raw),
      ),
    );
    return undefined;
  }
}

/**
 * A REST config source: each watched type is fetched with `POST /v{2,3}/discovery:<kind>` (a
 * JSON DiscoveryRequest carrying the version and nonce accepted so far, and the last
 * rejection as `error_detail`) every `refresh_delay`, each fetch bounded by `request_timeout`.
 * A 304 means nothing changed; a failed fetch (no member, a transport error, a status other
 * than 200 and 304) is tried again at the next tick; a body that is not a DiscoveryResponse in
 * JSON is rejected like one whose resources do not compile, as the reference does.
 */
export class RestPoller implements Transport {
  private readonly polls = new Map<string, Poll>();
  private closed = false;
  /** Connections kept between polls, each secured with the TLS of the poll that opened it. */
  private readonly agent = new ManagementAgent({ keepAlive: true });

  constructor(
    private readonly source: RestSource,
    /** The management server to ask now (`ip:port`), null while its cluster has no member. */
    private readonly target: () => string | null,
    /** How to reach it now: plain text, TLS with the secrets of the moment, or not yet (why). */
    private readonly security: () => ManagementSecurity,
    private readonly node: Record<string, unknown>,
    private readonly log: bunyan,
  ) {}

  watch(typeUrl: string, names: string[] | null, subscriber: Subscriber): void {
    const existing = this.polls.get(typeUrl);
    if (existing) {
      existing.subscriber = subscriber;
      existing.names = names ? [...names].sort() : null;
      return;
    }
    const poll: Poll = { typeUrl, names, version: '', nonce: '', error: null, subscriber, timer: null };
    this.polls.set(typeUrl, poll);
    void this.fetch(poll);
  }

  unwatch(typeUrl: string): void {
    const poll = this.polls.get(typeUrl);
    if (poll?.timer) clearTimeout(poll.timer);
    this.polls.delete(typeUrl);
  }

  close(): void {
    this.closed = true;
    for (const poll of this.polls.values()) if (poll.timer) clearTimeout(poll.timer);
    this.polls.clear();
    this.agent.destroy();
  }

  private async fetch(poll: Poll): Promise<void> {
    const kind = kindOfTypeUrl(poll.typeUrl);
    const target = this.target();
    const security = this.security();
    if (kind && !target) poll.subscriber.onFailure('the management cluster has no member');
    else if (kind && 'error' in security) poll.subscriber.onFailure(security.error);
    if (kind && target && !('error' in security)) {
      this.agent.tls = security.tls;
      const url = `${security.tls ? 'https' : 'http'}://${target}/${this.source.transport.toLowerCase()}/discovery:${PATHS[kind]}`;
      const body: JsonObject = {
        version_info: poll.version,
        node: this.node as JsonObject,
        resource_names: poll.names ?? [],
        type_url: poll.typeUrl,
        response_nonce: poll.nonce,
      };
      if (poll.error !== null) body.error_detail = { code: 3, message: poll.error };
      try {
        const res = await this.post(target, url, JSON.stringify(body));
        if (res.body === null) {
          this.log.warn({ url, limit: MAX_RESPONSE_BYTES }, 'xDS REST response too large');
          poll.subscriber.onFailure(`${url}: the response body exceeds ${MAX_RESPONSE_BYTES} bytes`);
        } else if (res.status === 200) await this.apply(poll, parseJson(res.body));
        else if (res.status === 304) poll.subscriber.onAttempt();
        else {
          this.log.warn({ url, status: res.status }, 'xDS REST fetch refused');
          poll.subscriber.onFailure(`${url}: HTTP ${res.status}`);
        }
      } catch (err) {
        this.log.warn({ err, url }, 'xDS REST fetch failed');
        poll.subscriber.onFailure(`${url}: ${(err as Error).message}`);
      }
    }
    if (this.closed || this.polls.get(poll.typeUrl) !== poll) return;
    poll.timer = setTimeout(() => void this.fetch(poll), this.source.refreshDelayMs);
    poll.timer.unref();
  }

  /** POSTs a request to `target`, the whole exchange bounded by `request_timeout`. */
  private post(target: string, url: string, body: string): Promise<{ status: number; body: Buffer | null }> {
    const where = connectOptionsOf(target);
    const signal = AbortSignal.timeout(this.source.requestTimeoutMs);
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          ...('path' in where ? { socketPath: where.path } : { host: where.host, port: where.port }),
          path: new URL(url).pathname,
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
          agent: this.agent,
          signal,
        },
        (res) =>
          bodyUpTo(res, MAX_RESPONSE_BYTES).then((answer) => {
            if (answer === null) res.destroy();
            resolve({ status: res.statusCode ?? 0, body: answer });
          }, reject),
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  private async apply(poll: Poll, response: unknown): Promise<void> {
    const { version_info: version, nonce } = (response ?? {}) as { version_info?: unknown; nonce?: unknown };
    poll.nonce = typeof nonce === 'string' ? nonce : '';
    poll.error = await poll.subscriber.onUpdate(response);
    if (poll.error === null) poll.version = typeof version === 'string' ? version : '';
  }
}

/** The whole body, or null (the rest left unread, the connection dropped) once past `limit` bytes. */
async function bodyUpTo(res: AsyncIterable<Uint8Array>, limit: number): Promise<Buffer | null> {
  const chunks: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of res) {
    length += chunk.byteLength;
    // Leaving the loop cancels the stream.
    if (length > limit) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, length);
}

/**
 * The body as JSON, or the error saying why not (which the subscriber rejects): a body that is
 * not UTF-8 too, rather than decoded with U+FFFD in place of its bad bytes.
 */
function parseJson(body: Buffer): unknown {
  if (!isUtf8(body)) return new Error('the body is not valid UTF-8 text');
  // Its error names the line and column, never quoting the text (a secret's value, for SDS).
  const parsed = parseJsonText(body.toString('utf8'), 'the body');
  return parsed.ok ? parsed.json : new Error(parsed.error);
}
