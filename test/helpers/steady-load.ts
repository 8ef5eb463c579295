/**
 * A bounded load generator on loopback: HTTP/1 keep-alive clients, HTTP/2 clients and a
 * prober that opens a new connection for each request, all sending `GET` to one port until
 * stopped (or `maxRequests` is reached). It counts what a restart must not cause: failed
 * requests and refused connections.
 *
 * Retries are only the ones HTTP allows a client to make without knowing whether the server
 * acted (RFC 9112 section 9.3.1, RFC 9113 section 8.7): an idempotent request on a reused
 * HTTP/1 connection that closed before any response byte (the server closed it as idle just
 * as the request left), and an HTTP/2 stream the server refused or left above its GOAWAY's
 * last stream ID. They are listed apart (`retried`); a second failure is a failure.
 */
import * as http from 'node:http';
import * as http2 from 'node:http2';

export interface LoadResult {
  ok: number;
  /** One line per failed request: what went wrong. */
  failed: string[];
  /** Connections refused (ECONNREFUSED). */
  refused: number;
  /** One line per retried request: why it could be retried. */
  retried: string[];
}

export interface SteadyLoad {
  /** Requests answered 200 with the expected body so far. */
  readonly ok: number;
  stop(): Promise<LoadResult>;
}

export interface LoadOptions {
  h1Clients: number;
  h2Clients: number;
  /** Milliseconds between the prober's fresh connections. */
  probeEveryMs: number;
  /** The generator stops by itself after this many requests. */
  maxRequests: number;
  /** The body every answer must have. */
  body: string;
}

/**
 * How long a request may go unanswered before it counts as failed. A request lost in a
 * restart (a connection nobody serves) never gets an answer, so this only bounds the wait for
 * one; it is generous because on a loaded machine (2 cores shared by many test processes) a
 * starting epoch holds every client's answers for seconds at once (up to 3.8 s measured with
 * the two hot-restart files running side by side at load average 21), and 5 s was once not
 * enough.
 */
const ANSWER_MS = 30_000;

class Outcome extends Error {
  constructor(
    readonly kind: 'refused' | 'retriable' | 'failed',
    message: string,
  ) {
    super(message);
  }
}

function h1Get(port: number, agent: http.Agent | false, path: string, body: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let responded = false;
    const req = http.get({ host: '127.0.0.1', port, path, agent }, (res) => {
      responded = true;
      let got = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        got += d;
      });
      res.on('end', () =>
        res.statusCode === 200 && got === body
          ? resolve()
          : reject(new Outcome('failed', `h1 ${path}: ${res.statusCode} ${got.slice(0, 80)}`)),
      );
      res.on('error', (err) => reject(new Outcome('failed', `h1 ${path}: response ${err.message}`)));
    });
    req.setTimeout(ANSWER_MS, () => req.destroy(new Error(`no answer within ${ANSWER_MS / 1000} s`)));
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNREFUSED') reject(new Outcome('refused', `h1 ${path}: refused`));
      else if (!responded && req.reusedSocket && err.code === 'ECONNRESET') {
        reject(new Outcome('retriable', `h1 ${path}: reused connection closed`));
      } else reject(new Outcome('failed', `h1 ${path}: ${err.code ?? ''} ${err.message}`));
    });
  });
}

/** One HTTP/2 connection at a time per client: a new one once the current got GOAWAY or closed. */
class H2Client {
  private session: http2.ClientHttp2Session | null = null;

  constructor(private readonly port: number) {}

  private current(): http2.ClientHttp2Session {
    if (this.session && !this.session.closed && !this.session.destroyed) return this.session;
    const session = http2.connect(`http://127.0.0.1:${this.port}`);
    session.on('error', () => {});
    const forget = () => {
      if (this.session === session) this.session = null;
    };
    session.on('goaway', forget);
    session.on('close', forget);
    this.session = session;
    return session;
  }

  get(path: string, body: string): Promise<void> {
    return new Promise((resolve, reject) => {
      let stream: http2.ClientHttp2Stream;
      try {
        stream = this.current().request({ ':path': path });
      } catch (err) {
        reject(new Outcome('retriable', `h2 ${path}: ${(err as Error).message}`));
        return;
      }
      let status = 0;
      let got = '';
      stream.setEncoding('utf8');
      stream.setTimeout(ANSWER_MS, () => stream.close(http2.constants.NGHTTP2_CANCEL));
      stream.on('response', (h) => {
        status = Number(h[':status']);
      });
      stream.on('data', (d: string) => {
        got += d;
      });
      stream.on('end', () =>
        status === 200 && got === body
          ? resolve()
          : reject(new Outcome('failed', `h2 ${path}: ${status} ${got.slice(0, 80)}`)),
      );
      stream.on('error', (err: NodeJS.ErrnoException) => {
        const refusedStream = stream.rstCode === http2.constants.NGHTTP2_REFUSED_STREAM;
        if (err.code === 'ECONNREFUSED') reject(new Outcome('refused', `h2 ${path}: refused`));
        else if (status === 0 && (refusedStream || err.code === 'ERR_HTTP2_GOAWAY_SESSION')) {
          reject(new Outcome('retriable', `h2 ${path}: not processed (${err.code})`));
        } else reject(new Outcome('failed', `h2 ${path}: ${err.code ?? ''} ${err.message}`));
      });
      stream.end();
    });
  }

  close(): void {
    this.session?.close();
  }
}

export function steadyLoad(port: number, options: LoadOptions): SteadyLoad {
  const result: LoadResult = { ok: 0, failed: [], refused: 0, retried: [] };
  let running = true;
  let sent = 0;
  const more = () => running && sent < options.maxRequests;
  /** One request, retried once where HTTP allows it. */
  const attempt = async (send: () => Promise<void>) => {
    sent += 1;
    for (let tries = 0; ; tries++) {
      try {
        await send();
        result.ok += 1;
        return;
      } catch (err) {
        const outcome = err instanceof Outcome ? err : new Outcome('failed', String(err));
        if (outcome.kind === 'refused') result.refused += 1;
        if (outcome.kind === 'retriable' && tries === 0) {
          result.retried.push(outcome.message);
          continue;
        }
        result.failed.push(outcome.message);
        return;
      }
    }
  };
  const loops: Promise<void>[] = [];
  for (let i = 0; i < options.h1Clients; i++) {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    loops.push(
      (async () => {
        for (let n = 0; more(); n++) await attempt(() => h1Get(port, agent, `/h1/${i}/${n}`, options.body));
        agent.destroy();
      })(),
    );
  }
  for (let i = 0; i < options.h2Clients; i++) {
    const client = new H2Client(port);
    loops.push(
      (async () => {
        for (let n = 0; more(); n++) await attempt(() => client.get(`/h2/${i}/${n}`, options.body));
        client.close();
      })(),
    );
  }
  loops.push(
    (async () => {
      for (let n = 0; more(); n++) {
        await attempt(() => h1Get(port, false, `/probe/${n}`, options.body));
        await new Promise((r) => setTimeout(r, options.probeEveryMs));
      }
    })(),
  );
  return {
    get ok() {
      return result.ok;
    },
    async stop() {
      running = false;
      await Promise.all(loops);
      return result;
    },
  };
}
