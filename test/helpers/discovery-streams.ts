/**
 * What the tests' two xDS management servers share (xds-server.ts, state of the world;
 * delta-xds-server.ts, incremental): the gRPC service on 127.0.0.1, its streams, each with what
 * it subscribed to by kind, and the requests seen, which a test waits on.
 */
import * as grpc from '@grpc/grpc-js';
import type { ResourceKind } from '../../src/edges/xds/types.js';

/** One discovery stream: its number in arrival order, the method it came on, its subscriptions. */
export interface Stream<Req, Res, Sub> {
  id: number;
  method: string;
  call: grpc.ServerDuplexStream<Req, Res>;
  subs: Map<ResourceKind, Sub>;
}

export abstract class DiscoveryStreams<
  Req,
  Res extends { nonce: string },
  Seen,
  Sub extends { nonce: string },
> {
  readonly requests: Seen[] = [];
  /** The headers (gRPC metadata) each stream opened with, in arrival order. */
  readonly streamHeaders: Array<Record<string, string>> = [];
  protected readonly conns = new Set<Stream<Req, Res, Sub>>();
  private readonly waiters = new Set<() => void>();
  private server: grpc.Server | null = null;
  private nextStream = 1;
  protected nextNonce = 1;
  port = 0;

  /** What a test's failed wait prints of each request seen. */
  protected abstract describe(request: Seen): string;

  /** A request arrived on `conn`: record it (`seen`), then answer as the protocol asks. */
  protected abstract onRequest(conn: Stream<Req, Res, Sub>, request: Req): void;

  /**
   * Serves every method of `methods` on `port` (0 picks one; a restart passes the old one), or
   * at `address` (`unix:/path`) when given.
   */
  protected async bind(
    port: number,
    methods: Record<'V2' | 'V3', Record<string, string>>,
    codec: { decode: (bytes: Buffer) => Req; encode: (message: Res) => Buffer },
    address = `127.0.0.1:${port}`,
  ): Promise<void> {
    const server = new grpc.Server();
    const service: Record<string, grpc.MethodDefinition<Req, Res>> = {};
    const handlers: grpc.UntypedServiceImplementation = {};
    for (const version of ['V2', 'V3'] as const) {
      for (const [kind, path] of Object.entries(methods[version])) {
        const key = `${version}_${kind}`;
        service[key] = {
          path,
          requestStream: true,
          responseStream: true,
          // The server never sends requests nor reads responses.
          requestSerialize: () => Buffer.alloc(0),
          requestDeserialize: codec.decode,
          responseSerialize: codec.encode,
          responseDeserialize: () => ({}) as Res,
          originalName: key,
        };
        handlers[key] = (call: grpc.ServerDuplexStream<Req, Res>) => this.onStream(call, path);
      }
    }
    server.addService(service, handlers);
    this.port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    this.server = server;
  }

  /** Records a request and wakes every wait. */
  protected seen(request: Seen): void {
    this.requests.push(request);
    for (const wake of this.waiters) wake();
    this.waiters.clear();
  }

  /**
   * Sends `response` as it is (any resources, any type URL, the nonce given) on every stream
   * subscribed to `kind`: how a test plays a broken or hostile management server.
   */
  sendRaw(kind: ResourceKind, response: Res): void {
    for (const conn of this.conns) {
      const sub = conn.subs.get(kind);
      if (!sub) continue;
      sub.nonce = response.nonce;
      conn.call.write(response);
    }
  }

  /** Resolves with the first request (from now on or already seen after `from`) matching. */
  async waitFor(match: (r: Seen) => boolean, timeoutMs = 10_000, from = 0): Promise<Seen> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.requests.slice(from).find(match);
      if (hit) return hit;
      if (Date.now() > deadline) {
        const seen = this.requests.map((r) => this.describe(r));
        throw new Error(`no matching xDS request within ${timeoutMs} ms; seen:\n${seen.join('\n')}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 50);
        this.waiters.add(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  get streams(): number {
    return this.conns.size;
  }

  /** Stops at once: every stream is cut, as when a management server dies. */
  async stop(): Promise<void> {
    for (const conn of this.conns) conn.call.destroy();
    this.conns.clear();
    this.server?.forceShutdown();
    this.server = null;
  }

  private onStream(call: grpc.ServerDuplexStream<Req, Res>, method: string): void {
    const conn: Stream<Req, Res, Sub> = { id: this.nextStream++, method, call, subs: new Map() };
    this.conns.add(conn);
    this.streamHeaders.push(
      Object.fromEntries(Object.entries(call.metadata.getMap()).map(([k, v]) => [k, String(v)])),
    );
    call.on('data', (request: Req) => this.onRequest(conn, request));
    call.on('error', () => this.conns.delete(conn));
    call.on('end', () => {
      this.conns.delete(conn);
      call.end();
    });
  }
}
