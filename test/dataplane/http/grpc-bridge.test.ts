/**
 * The grpc_http1_bridge filter over real sockets: HTTP/1.1 clients send framed gRPC messages
 * through the proxy to a real gRPC server (grpc-js) and a raw HTTP/2 one, over the cluster's
 * HTTP/2 pool, and read the call's outcome from response headers.
 *
 * Root cause of the held-response case: the bridge held an HTTP/1 client's response until the
 * upstream's trailers with no bound, so a server-streaming call (or any answer that never ends)
 * grew the worker's memory by what the upstream sent (225 MB in 6 s on a loaded machine, nothing
 * reaching the client). The reference's bridge buffers under the listener's
 * `per_connection_buffer_limit_bytes` and answers 500 past it.
 */
import assert from 'node:assert/strict';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { hcmWithRoutes, httpBootstrap } from '../../helpers/bootstraps.js';
import { compileTestHcm } from '../../helpers/compile.js';
import { cluster, SETTLE_MS, settle } from '../../helpers/dataplane.js';
import {
  closedPort,
  echoServer,
  failingAfterDataServer,
  frame,
  frames,
  post,
} from '../../helpers/grpc-upstream.js';
import { startProxy, type TestProxy } from '../../helpers/http-dataplane.js';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';

const GRPC = { 'content-type': 'application/grpc' };

let echo: Awaited<ReturnType<typeof echoServer>>;
let failing: Awaited<ReturnType<typeof failingAfterDataServer>>;
let proxy: TestProxy;
/** Streams 64 KiB messages for as long as the stream is open, never trailers; counts what it sent. */
let endless: http2.Http2Server;
const endlessSent = { bytes: 0, closed: 0 };

before(async () => {
  echo = await echoServer();
  failing = await failingAfterDataServer();
  endless = http2.createServer();
  endless.on('stream', (stream) => {
    stream.on('error', () => {});
    stream.on('close', () => endlessSent.closed++);
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
    const message = frame(Buffer.alloc(65536));
    const pump = () => {
      while (!stream.destroyed && endlessSent.bytes < 64e6) {
        endlessSent.bytes += message.length;
        if (!stream.write(message)) return void stream.once('drain', pump);
      }
    };
    pump();
  });
  await new Promise<void>((resolve) => endless.listen(0, '127.0.0.1', resolve));
  const h2 = (name: string, port: number) => ({
    raw: { name, connect_timeout: '1s', http2_protocol_options: {} },
    addresses: [`127.0.0.1:${port}`],
  });
  const route = (prefix: string, cluster: string) => ({ match: { prefix }, route: { cluster } });
  proxy = await startProxy(
    {
      stat_prefix: 'egress',
      route_config: {
        virtual_hosts: [
          {
            name: 'all',
            domains: ['*'],
            routes: [
              route('/fail.', 'failing'),
              route('/down.', 'down'),
              route('/endless.', 'endless'),
              route('/', 'echo'),
            ],
          },
        ],
      },
      http_filters: [{ name: 'envoy.grpc_http1_bridge', config: {} }, { name: 'envoy.router' }],
    },
    [
      h2('echo', echo.port),
      h2('failing', failing.port),
      h2('down', await closedPort()),
      h2('endless', (endless.address() as AddressInfo).port),
    ],
  );
});

after(async () => {
  await proxy.close();
  echo.close();
  failing.close();
  endless.close();
});

const stat = (cluster: string, rest: string) => proxy.counter(`cluster.${cluster}.grpc.${rest}`);

describe('grpc_http1_bridge', () => {
  it('answers an HTTP/1.1 gRPC call with the reply, grpc-status in the head and the length of the body', async () => {
    const a = await post(proxy.port, '/test.Echo/Echo', GRPC, frame('hi'));
    assert.equal(a.status, 200);
    assert.equal(a.headers['grpc-status'], '0');
    assert.equal(a.headers['content-length'], String(a.body.length));
    assert.equal(a.headers['transfer-encoding'], undefined);
    assert.deepEqual(
      frames(a.body).map((f) => f.payload.toString()),
      ['echo:hi'],
    );
    assert.equal(echo.seen.length > 0, true);
  });

  it('counts each call per service and method under the cluster', async () => {
    const before = stat('echo', 'test.Echo.Echo.total');
    const ok = stat('echo', 'test.Echo.Echo.success');
    await post(proxy.port, '/test.Echo/Echo', GRPC, frame('again'));
    assert.equal(stat('echo', 'test.Echo.Echo.total'), before + 1);
    assert.equal(stat('echo', 'test.Echo.Echo.success'), ok + 1);
    assert.ok(stat('echo', 'test.Echo.Echo.0') >= 1);
  });

  // Root cause: the bridge read grpc-status only from trailers, so a trailers-only error (the
  // status in the one head a gRPC server sends for an error before any message) kept its 200,
  // where the reference answers 503 since 1.18 (envoyproxy/envoy#14872).
  it('a trailers-only error from a real gRPC server is a 503 with its grpc-status and grpc-message in the head, counted a failure', async () => {
    const failure = stat('echo', 'test.Echo.Echo.failure');
    const errors = proxy.counter('http.egress.downstream_rq_5xx');
    const a = await post(proxy.port, '/test.Echo/Echo', GRPC, frame('missing'));
    assert.equal(a.status, 503);
    assert.equal(a.headers['content-length'], '0');
    assert.equal(proxy.counter('http.egress.downstream_rq_5xx'), errors + 1);
    assert.equal(a.headers['grpc-status'], '5');
    // grpc-js percent-encodes its message; the bridge copies it as sent.
    assert.equal(a.headers['grpc-message'], 'no%20such%20thing');
    assert.equal(a.body.length, 0);
    assert.equal(stat('echo', 'test.Echo.Echo.failure'), failure + 1);
    assert.equal(stat('echo', 'test.Echo.Echo.5'), 1);
  });

  it('a non-zero grpc-status in the trailers makes the response a 503 that keeps its body', async () => {
    const errors = proxy.counter('http.egress.downstream_rq_5xx');
    const a = await post(proxy.port, '/fail.Svc/Call', GRPC, frame('x'));
    assert.equal(a.status, 503);
    assert.equal(a.headers['grpc-status'], '2');
    assert.equal(a.headers['grpc-message'], 'broke');
    assert.deepEqual(
      frames(a.body).map((f) => f.payload.toString()),
      ['partial'],
    );
    assert.equal(stat('failing', 'fail.Svc.Call.failure'), 1);
    assert.equal(proxy.counter('http.egress.downstream_rq_5xx'), errors + 1, 'counted as the client saw it');
  });

  it('an upstream that is down answers as a gRPC server would: 200, grpc-status 14 (UNAVAILABLE), the reason', async () => {
    const ok = proxy.counter('http.egress.downstream_rq_2xx');
    const a = await post(proxy.port, '/down.Svc/Call', GRPC, frame('x'));
    assert.equal(a.status, 200);
    assert.equal(a.headers['content-type'], 'application/grpc');
    assert.equal(a.headers['grpc-status'], '14');
    assert.match(
      String(a.headers['grpc-message']),
      /^upstream connect error or disconnect\/reset before headers/,
    );
    assert.equal(a.body.length, 0);
    assert.equal(stat('down', 'down.Svc.Call.14'), 1);
    assert.equal(proxy.counter('http.egress.downstream_rq_2xx'), ok + 1);
  });

  it("a response held past the buffer limit (1 MiB) without trailers is the proxy's 500, as a gRPC answer; the upstream stream is reset", async () => {
    const a = await post(proxy.port, '/endless.Svc/Stream', GRPC, frame('x'));
    assert.equal(a.status, 200);
    assert.equal(a.headers['grpc-status'], '2', 'UNKNOWN: the gRPC status of an HTTP 500');
    assert.equal(a.headers['grpc-message'], 'Internal Server Error');
    assert.equal(a.body.length, 0);
    assert.equal(proxy.counter('http.egress.rs_too_large'), 1);
    for (let i = 0; i < 100 && endlessSent.closed === 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(endlessSent.closed, 1, 'the upstream stream ended');
    assert.ok(endlessSent.bytes < 8e6, `the upstream sent ${endlessSent.bytes} bytes`);
  });

  it('leaves a request that is not gRPC alone', async () => {
    const a = await post(proxy.port, '/test.Echo/Echo', { 'content-type': 'application/json' }, '{}');
    // grpc-js refuses a call without the gRPC content type (415); nothing is mapped or counted.
    assert.equal(a.status, 415);
    assert.equal(a.headers['grpc-status'], undefined);
  });
});

describe('gRPC filter config', () => {
  const grpcOf = (filter: Record<string, unknown>) =>
    compileTestHcm({
      stat_prefix: 's',
      route_config: { virtual_hosts: [] },
      http_filters: [filter, { name: 'envoy.router' }],
    }).filters.stream.map((f) => /\.(grpc_http1_bridge|grpc_web)\./.exec(f.configType)?.[1]);

  it('takes every spelling of either name, and the v2 or v3 @type alone', () => {
    for (const name of [
      'envoy.grpc_http1_bridge',
      'envoy.filters.http.grpc_http1_bridge',
      'proxy.grpc_http1_bridge',
      'proxy.filters.http.grpc_http1_bridge',
    ])
      assert.deepEqual(grpcOf({ name, config: {} }), ['grpc_http1_bridge'], name);
    for (const name of ['envoy.grpc_web', 'envoy.filters.http.grpc_web', 'proxy.filters.http.grpc_web'])
      assert.deepEqual(grpcOf({ name, typed_config: {} }), ['grpc_web'], name);
    const typed = (t: string) => ({ typed_config: { '@type': `type.googleapis.com/${t}` } });
    assert.deepEqual(grpcOf(typed('envoy.config.filter.http.grpc_http1_bridge.v2.Config')), [
      'grpc_http1_bridge',
    ]);
    assert.deepEqual(grpcOf(typed('envoy.extensions.filters.http.grpc_web.v3.GrpcWeb')), ['grpc_web']);
  });

  it('refuses a field neither v2 message has', () => {
    assert.throws(
      () => grpcOf({ name: 'envoy.grpc_web', config: { withhold_grpc_frames: true } }),
      /withhold_grpc_frames/,
    );
  });
});

describe('grpc_http1_bridge in a proxy process with two workers, configured as the reference documents it', () => {
  let grpcServer: Awaited<ReturnType<typeof echoServer>>;
  let proc: ProxyProcess;
  let port: number;

  before(async () => {
    grpcServer = await echoServer();
    proc = await startProxyProcess(
      httpBootstrap([cluster('grpc', [grpcServer.port], { http2_protocol_options: {} })], {
        ...hcmWithRoutes([{ match: { prefix: '/' }, route: { cluster: 'grpc' } }], 'bridge'),
        // As the reference's docs give the filter (grpc_http1_bridge_filter.rst).
        http_filters: [
          {
            name: 'envoy.filters.http.grpc_http1_bridge',
            typed_config: {
              '@type': 'type.googleapis.com/envoy.extensions.filters.http.grpc_http1_bridge.v3.Config',
            },
          },
          {
            name: 'envoy.filters.http.router',
            typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' },
          },
        ],
      }),
      ['--concurrency', '2'],
    );
    port = await proc.listenerPort('http');
  });

  after(async () => {
    await proc?.stop();
    grpcServer?.close();
  });

  it('answers each of several calls: the reply 200, the trailers-only error 503 with its grpc-status in the head', async () => {
    for (let i = 0; i < 4; i++) {
      const ok = await post(port, '/test.Echo/Echo', GRPC, frame(`m${i}`));
      assert.equal(ok.status, 200);
      assert.equal(ok.headers['grpc-status'], '0');
      assert.deepEqual(
        frames(ok.body).map((f) => f.payload.toString()),
        [`echo:m${i}`],
      );
      const failed = await post(port, '/test.Echo/Echo', GRPC, frame('missing'));
      assert.equal(failed.status, 503);
      assert.equal(failed.headers['grpc-status'], '5');
      assert.equal(failed.headers['grpc-message'], 'no%20such%20thing');
    }
    const count = async (name: string) =>
      Number(
        new RegExp(`^${name.replaceAll('.', '\\.')}: (\\d+)$`, 'm').exec(
          (await proc.get('/stats')).body,
        )?.[1] ?? -1,
      );
    assert.equal(await settle(() => count('cluster.grpc.grpc.test.Echo.Echo.failure'), 4, SETTLE_MS), 4);
    assert.equal(await settle(() => count('http.bridge.downstream_rq_5xx'), 4, SETTLE_MS), 4);
  });
});
