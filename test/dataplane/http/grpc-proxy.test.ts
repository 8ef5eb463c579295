/**
 * Plain gRPC proxied over HTTP/2 both ways, as a mesh needs it: a grpc-js client on an h2c
 * connection to the proxy, a cluster with `http2_protocol_options`, a grpc-js server behind it.
 * No gRPC filter is configured: the status must arrive in the response trailers the HTTP/2
 * downstream sends, and the proxy's own answers must be gRPC ones because the request is.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import type { JsonObject } from '../../../events/index.js';
import { percentEncode } from '../../../src/dataplane/http/grpc.js';
import { httpBootstrap } from '../../helpers/bootstraps.js';
import { closedPort, rawMethod as method } from '../../helpers/grpc-upstream.js';
import { startProxy, type TestProxy } from '../../helpers/http-dataplane.js';
import { startProxyProcess } from '../../helpers/proxy-process.js';

/** The test service: raw bytes in and out, so no codec stands between the test and the wire. */
const SVC = {
  unary: method('/test.Svc/Unary', false, false),
  many: method('/test.Svc/Many', false, true),
  sum: method('/test.Svc/Sum', true, false),
  chat: method('/test.Svc/Chat', true, true),
  slow: method('/test.Svc/Slow', false, false),
};
const Client = grpc.makeGenericClientConstructor(SVC, 'Svc');
type SvcClient = InstanceType<typeof Client> & Record<keyof typeof SVC, (...args: unknown[]) => unknown>;

/** Calls the server saw cancelled, by method. */
const cancelled: string[] = [];
let server: grpc.Server;
let serverPort = 0;
let proxy: TestProxy;
let client: SvcClient;
/** A raw HTTP/2 upstream that answers OK after the request ends, keeping its trailers. */
let recorder: http2.Http2Server;
const requestTrailers: http2.IncomingHttpHeaders[] = [];

before(async () => {
  server = new grpc.Server();
  server.addService(SVC, {
    unary: (call: grpc.ServerUnaryCall<Buffer, Buffer>, done: grpc.sendUnaryData<Buffer>) => {
      const text = call.request.toString();
      if (text !== 'fail') {
        done(null, Buffer.from(`echo:${text}`));
        return;
      }
      const trailing = new grpc.Metadata();
      trailing.set('x-why', 'because');
      done({ code: grpc.status.INVALID_ARGUMENT, details: 'bad input: 100% wrong', metadata: trailing });
    },
    many: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      for (let i = 0; i < 100; i++) call.write(Buffer.from(`m${i}`));
      call.end();
    },
    sum: (call: grpc.ServerReadableStream<Buffer, Buffer>, done: grpc.sendUnaryData<Buffer>) => {
      let n = 0;
      call.on('data', (m: Buffer) => {
        n += Number(m.toString());
      });
      call.on('end', () => done(null, Buffer.from(String(n))));
    },
    chat: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      call.on('data', (m: Buffer) => call.write(Buffer.from(`re:${m}`)));
      call.on('end', () => call.end());
    },
    slow: (call: grpc.ServerUnaryCall<Buffer, Buffer>, done: grpc.sendUnaryData<Buffer>) => {
      const timer = setTimeout(() => done(null, Buffer.from('late')), 3000);
      call.on('cancelled', () => {
        clearTimeout(timer);
        cancelled.push(call.request.toString());
      });
    },
  });
  serverPort = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  recorder = http2.createServer();
  recorder.on('stream', (stream) => {
    stream.on('trailers', (t: http2.IncomingHttpHeaders) => requestTrailers.push(t));
    stream.resume();
    stream.on('end', () =>
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '0' },
        { endStream: true },
      ),
    );
  });
  await new Promise<void>((resolve) => recorder.listen(0, '127.0.0.1', resolve));
  const h2 = (name: string, port: number) => ({
    raw: { name, connect_timeout: '1s', http2_protocol_options: {} },
    addresses: [`127.0.0.1:${port}`],
  });
  proxy = await startProxy(
    {
      stat_prefix: 'grpc',
      route_config: {
        virtual_hosts: [
          {
            name: 'all',
            domains: ['*'],
            routes: [
              { match: { prefix: '/test.Down/' }, route: { cluster: 'down' } },
              { match: { prefix: '/test.Rec/' }, route: { cluster: 'recorder' } },
              {
                match: { prefix: '/test.Direct/' },
                direct_response: { status: 403, body: { inline_string: 'no: 100% ünïcode\n' } },
              },
              {
                match: {
                  prefix: '/test.Svc/Slow',
                  headers: [{ name: 'x-route-timeout', exact_match: 'yes' }],
                },
                route: { cluster: 'svc', timeout: '0.2s' },
              },
              { match: { prefix: '/' }, route: { cluster: 'svc' } },
            ],
          },
        ],
      },
      http_filters: [{ name: 'envoy.router' }],
    },
    [
      h2('svc', serverPort),
      h2('down', await closedPort()),
      h2('recorder', (recorder.address() as AddressInfo).port),
    ],
  );
  client = new Client(`127.0.0.1:${proxy.port}`, grpc.credentials.createInsecure()) as SvcClient;
});

after(async () => {
  client.close();
  await proxy.close();
  server.forceShutdown();
  recorder.close();
});

const deadline = (ms = 5000) => ({ deadline: Date.now() + ms });

/** A unary call's outcome: the reply or the error, and the trailing metadata either way. */
function unary(
  c: SvcClient,
  name: 'unary' | 'slow',
  body: string,
  metadata = new grpc.Metadata(),
  ms = 5000,
): Promise<{ reply?: string; error?: grpc.ServiceError; trailers?: grpc.Metadata }> {
  return new Promise((resolve) => {
    let trailers: grpc.Metadata | undefined;
    const call = c[name](
      Buffer.from(body),
      metadata,
      deadline(ms),
      (error: grpc.ServiceError | null, reply?: Buffer) =>
        setImmediate(() => resolve(error ? { error, trailers } : { reply: reply?.toString(), trailers })),
    ) as grpc.ClientUnaryCall;
    call.on('status', (s: grpc.StatusObject) => {
      trailers = s.metadata;
    });
  });
}

describe('gRPC over HTTP/2 through the proxy (no gRPC filter)', () => {
  it('a unary call ends OK: the grpc-status trailer reaches the client', async () => {
    const r = await unary(client, 'unary', 'hi');
    assert.equal(r.error, undefined, String(r.error));
    assert.equal(r.reply, 'echo:hi');
  });

  it('an error status, its message and custom trailing metadata reach the client', async () => {
    const r = await unary(client, 'unary', 'fail');
    assert.equal(r.error?.code, grpc.status.INVALID_ARGUMENT);
    assert.equal(r.error?.details, 'bad input: 100% wrong');
    assert.deepEqual(r.error?.metadata.get('x-why'), ['because']);
  });

  it('server streaming: 100 messages, then status OK', async () => {
    const call = client.many(Buffer.from(''), deadline()) as grpc.ClientReadableStream<Buffer>;
    const got: string[] = [];
    call.on('data', (m: Buffer) => got.push(m.toString()));
    const status = await new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
    assert.equal(status.code, grpc.status.OK, status.details);
    assert.equal(got.length, 100);
    assert.equal(got[99], 'm99');
  });

  it('client streaming: every message and the end of the request reach the server', async () => {
    const reply = await new Promise<string>((resolve, reject) => {
      const call = client.sum(deadline(), (err: grpc.ServiceError | null, r?: Buffer) =>
        err ? reject(err) : resolve(String(r)),
      ) as grpc.ClientWritableStream<Buffer>;
      for (let i = 1; i <= 10; i++) call.write(Buffer.from(String(i)));
      call.end();
    });
    assert.equal(reply, '55');
  });

  it('bidi streaming: replies interleave with requests, then status OK', async () => {
    const call = client.chat(deadline()) as grpc.ClientDuplexStream<Buffer, Buffer>;
    const got: string[] = [];
    // Each request waits for the reply to the one before: the stream really goes both ways.
    for (const word of ['a', 'b', 'c']) {
      call.write(Buffer.from(word));
      got.push(
        await new Promise<string>((resolve) => call.once('data', (m: Buffer) => resolve(m.toString()))),
      );
    }
    call.end();
    const status = await new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
    assert.deepEqual(got, ['re:a', 're:b', 're:c']);
    assert.equal(status.code, grpc.status.OK);
  });

  it('a client deadline shorter than the server: DEADLINE_EXCEEDED, and the server sees the call cancelled', async () => {
    const r = await unary(client, 'slow', 'deadline', new grpc.Metadata(), 300);
    assert.equal(r.error?.code, grpc.status.DEADLINE_EXCEEDED);
    await waitFor(() => cancelled.includes('deadline'), 'the server never saw the cancellation');
  });

  it('a client cancel resets the upstream stream: the server sees the call cancelled', async () => {
    const call = client.slow(Buffer.from('cancel'), deadline(), () => {}) as grpc.ClientUnaryCall;
    await new Promise((r) => setTimeout(r, 100));
    call.cancel();
    await waitFor(() => cancelled.includes('cancel'), 'the server never saw the cancellation');
  });

  it("the route's timeout answers trailers-only UNAVAILABLE 'upstream request timeout', the server call cancelled", async () => {
    const md = new grpc.Metadata();
    md.set('x-route-timeout', 'yes');
    const r = await unary(client, 'slow', 'route-timeout', md);
    assert.equal(r.error?.code, grpc.status.UNAVAILABLE);
    assert.equal(r.error?.details, 'upstream request timeout');
    await waitFor(() => cancelled.includes('route-timeout'), 'the server never saw the cancellation');
  });

  it('an upstream that is down: UNAVAILABLE with the reference reset text', async () => {
    const down = grpc.makeGenericClientConstructor({ call: method('/test.Down/Call', false, false) }, 'Down');
    const c = new down(`127.0.0.1:${proxy.port}`, grpc.credentials.createInsecure()) as SvcClient & {
      call: (...args: unknown[]) => unknown;
    };
    const error = await new Promise<grpc.ServiceError | null>((resolve) =>
      c.call(Buffer.from('x'), deadline(), (err: grpc.ServiceError | null) => resolve(err)),
    );
    c.close();
    assert.equal(error?.code, grpc.status.UNAVAILABLE);
    assert.match(
      error?.details ?? '',
      /^upstream connect error or disconnect\/reset before headers\. reset reason: connection failure/,
    );
  });

  it('a local reply to a gRPC request is gRPC: status from the HTTP one, grpc-message percent-encoded', async () => {
    const direct = grpc.makeGenericClientConstructor(
      { call: method('/test.Direct/Call', false, false) },
      'Direct',
    );
    const c = new direct(`127.0.0.1:${proxy.port}`, grpc.credentials.createInsecure()) as SvcClient & {
      call: (...args: unknown[]) => unknown;
    };
    const error = await new Promise<grpc.ServiceError | null>((resolve) =>
      c.call(Buffer.from('x'), deadline(), (err: grpc.ServiceError | null) => resolve(err)),
    );
    c.close();
    assert.equal(error?.code, grpc.status.PERMISSION_DENIED);
    assert.equal(error?.details, 'no: 100% ünïcode\n');
    assert.equal(percentEncode('a%b\n é'), 'a%25b%0A %C3%A9');
  });

  it('an upstream reset after the head reaches the client as RST_STREAM', async () => {
    const raw = http2.createServer();
    raw.on('stream', (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
      stream.on('error', () => {});
      // destroy, not close: close(code) ends the stream cleanly first when the request has ended.
      stream.write(Buffer.from([0, 0, 0, 0, 1, 0x41]), () => stream.destroy(new Error('broken')));
    });
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
    const p = await startProxy(
      {
        stat_prefix: 'reset',
        route_config: {
          virtual_hosts: [
            { name: 'all', domains: ['*'], routes: [{ match: { prefix: '/' }, route: { cluster: 'raw' } }] },
          ],
        },
        http_filters: [{ name: 'envoy.router' }],
      },
      [
        {
          raw: { name: 'raw', connect_timeout: '1s', http2_protocol_options: {} },
          addresses: [`127.0.0.1:${(raw.address() as AddressInfo).port}`],
        },
      ],
    );
    try {
      const session = http2.connect(`http://127.0.0.1:${p.port}`);
      const req = session.request({
        ':method': 'POST',
        ':path': '/x.Y/Z',
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      req.end(Buffer.from([0, 0, 0, 0, 0]));
      req.on('error', () => {});
      req.resume();
      const code = await withTimeout(
        new Promise<number>((resolve) => req.on('close', () => resolve(req.rstCode))),
      );
      session.close();
      assert.equal(code, http2.constants.NGHTTP2_INTERNAL_ERROR, 'a reset, not a clean end');
    } finally {
      await p.close();
      raw.close();
    }
  });

  it('request trailers from an HTTP/2 client reach an HTTP/2 upstream', async () => {
    const session = http2.connect(`http://127.0.0.1:${proxy.port}`);
    try {
      const req = session.request(
        { ':method': 'POST', ':path': '/test.Rec/Call', 'content-type': 'application/grpc', te: 'trailers' },
        { waitForTrailers: true },
      );
      req.on('wantTrailers', () => req.sendTrailers({ 'x-checksum': 'abc', 'x-end': 'yes' }));
      req.end(Buffer.from([0, 0, 0, 0, 0]));
      req.resume();
      const head = await withTimeout(
        new Promise<http2.IncomingHttpHeaders>((resolve) => req.on('response', resolve)),
      );
      assert.equal(head['grpc-status'], '0');
      const got = requestTrailers.at(-1);
      assert.equal(got?.['x-checksum'], 'abc');
      assert.equal(got?.['x-end'], 'yes');
    } finally {
      session.close();
    }
  });

  it('request trailers from an HTTP/2 client: the request still ends upstream (client streaming completes)', async () => {
    const session = http2.connect(`http://127.0.0.1:${proxy.port}`);
    try {
      const req = session.request(
        { ':method': 'POST', ':path': '/test.Svc/Sum', 'content-type': 'application/grpc', te: 'trailers' },
        { waitForTrailers: true },
      );
      req.on('wantTrailers', () => req.sendTrailers({ 'x-end': 'yes' }));
      const msg = (s: string) => Buffer.concat([Buffer.from([0, 0, 0, 0, s.length]), Buffer.from(s)]);
      req.write(msg('4'));
      req.end(msg('5'));
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      const trailers = await withTimeout(
        new Promise<http2.IncomingHttpHeaders>((resolve) => req.on('trailers', resolve)),
      );
      assert.equal(trailers['grpc-status'], '0');
      assert.equal(Buffer.concat(chunks).subarray(5).toString(), '9');
    } finally {
      session.close();
    }
  });
});

describe('gRPC over HTTP/2 with the grpc_http1_bridge filter in the chain', () => {
  it('the bridge only counts: status and trailing metadata arrive in the trailers, the call counted', async () => {
    const p = await startProxy(
      {
        stat_prefix: 'bridged',
        route_config: {
          virtual_hosts: [
            { name: 'all', domains: ['*'], routes: [{ match: { prefix: '/' }, route: { cluster: 'svc' } }] },
          ],
        },
        http_filters: [{ name: 'envoy.grpc_http1_bridge' }, { name: 'envoy.router' }],
      },
      [
        {
          raw: { name: 'svc', connect_timeout: '1s', http2_protocol_options: {} },
          addresses: [`127.0.0.1:${serverPort}`],
        },
      ],
    );
    const c = new Client(`127.0.0.1:${p.port}`, grpc.credentials.createInsecure()) as SvcClient;
    try {
      const ok = await unary(c, 'unary', 'hi');
      assert.equal(ok.reply, 'echo:hi', String(ok.error));
      const failed = await unary(c, 'unary', 'fail');
      assert.equal(failed.error?.code, grpc.status.INVALID_ARGUMENT);
      assert.deepEqual(failed.error?.metadata.get('x-why'), ['because']);
      assert.equal(p.counter('cluster.svc.grpc.test.Svc.Unary.total'), 2);
      assert.equal(p.counter('cluster.svc.grpc.test.Svc.Unary.success'), 1);
    } finally {
      c.close();
      await p.close();
    }
  });
});

/** A gRPC call over HTTP/1.1 (no bridge filter): the response's head, body and chunked trailers. */
function h1Call(
  te: boolean,
): Promise<{ headers: http.IncomingHttpHeaders; body: Buffer; trailers: NodeJS.Dict<string> }> {
  const message = Buffer.concat([Buffer.from([0, 0, 0, 0, 2]), Buffer.from('hi')]);
  return withTimeout(
    new Promise((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port: proxy.port,
          method: 'POST',
          path: '/test.Svc/Unary',
          agent: false,
          headers: { 'content-type': 'application/grpc', ...(te ? { te: 'trailers' } : {}) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ headers: res.headers, body: Buffer.concat(chunks), trailers: res.trailers }),
          );
        },
      );
      req.on('error', reject);
      req.end(message);
    }),
  );
}

describe('HTTP/1.1 clients of an HTTP/2 gRPC upstream', () => {
  it('with te: trailers, the trailers come in the last chunk', async () => {
    const r = await h1Call(true);
    assert.equal(r.headers['transfer-encoding'], 'chunked');
    assert.equal(r.body.subarray(5).toString(), 'echo:hi');
    assert.equal(r.trailers['grpc-status'], '0');
  });

  it('without te: trailers, they are dropped and the chunked body still ends', async () => {
    const r = await h1Call(false);
    assert.equal(r.body.subarray(5).toString(), 'echo:hi');
    assert.deepEqual(r.trailers, {});
  });
});

describe('gRPC through a proxy process with --concurrency 2', () => {
  it('unary and server-streaming calls complete with their status on every worker', async () => {
    const cluster: JsonObject = {
      name: 'svc',
      connect_timeout: '1s',
      type: 'STATIC',
      http2_protocol_options: {},
      load_assignment: {
        cluster_name: 'svc',
        endpoints: [
          {
            lb_endpoints: [
              { endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: serverPort } } } },
            ],
          },
        ],
      },
    };
    const hcm: JsonObject = {
      stat_prefix: 'ingress_http',
      route_config: {
        virtual_hosts: [
          { name: 'all', domains: ['*'], routes: [{ match: { prefix: '/' }, route: { cluster: 'svc' } }] },
        ],
      },
      http_filters: [{ name: 'envoy.router' }],
    };
    const p = await startProxyProcess(httpBootstrap([cluster], hcm), ['--concurrency', '2']);
    try {
      const port = await p.listenerPort('http');
      // Several channels: connections spread over both workers.
      for (let i = 0; i < 4; i++) {
        const c = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
          'grpc.use_local_subchannel_pool': 1,
        }) as SvcClient;
        try {
          const ok = await unary(c, 'unary', `w${i}`);
          assert.equal(ok.reply, `echo:w${i}`, String(ok.error));
          const failed = await unary(c, 'unary', 'fail');
          assert.equal(failed.error?.code, grpc.status.INVALID_ARGUMENT);
          const call = c.many(Buffer.from(''), deadline()) as grpc.ClientReadableStream<Buffer>;
          let n = 0;
          call.on('data', () => {
            n += 1;
          });
          const status = await new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
          assert.equal(status.code, grpc.status.OK);
          assert.equal(n, 100);
        } finally {
          c.close();
        }
      }
    } finally {
      await p.stop();
    }
  });
});

async function waitFor(check: () => boolean, message: string, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(message);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function withTimeout<T>(p: Promise<T>, ms = 5000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms);
    }),
  ]);
}
