/**
 * The grpc_http1_bridge filter over real sockets: HTTP/1.1 clients send framed gRPC messages
 * through the proxy to a real gRPC server (grpc-js) and a raw HTTP/2 one, over the cluster's
 * HTTP/2 pool, and read the call's outcome from response headers.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { compileTestHcm } from '../../helpers/compile.js';
import {
  closedPort,
  echoServer,
  failingAfterDataServer,
  frame,
  frames,
  post,
} from '../../helpers/grpc-upstream.js';
import { startProxy, type TestProxy } from '../../helpers/http-dataplane.js';

const GRPC = { 'content-type': 'application/grpc' };

let echo: Awaited<ReturnType<typeof echoServer>>;
let failing: Awaited<ReturnType<typeof failingAfterDataServer>>;
let proxy: TestProxy;

before(async () => {
  echo = await echoServer();
  failing = await failingAfterDataServer();
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
            routes: [route('/fail.', 'failing'), route('/down.', 'down'), route('/', 'echo')],
          },
        ],
      },
      http_filters: [{ name: 'envoy.grpc_http1_bridge', config: {} }, { name: 'envoy.router' }],
    },
    [h2('echo', echo.port), h2('failing', failing.port), h2('down', await closedPort())],
  );
});

after(async () => {
  await proxy.close();
  echo.close();
  failing.close();
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

  it('a trailers-only error passes as the server sent it: 200, its grpc-status and grpc-message, counted a failure', async () => {
    const failure = stat('echo', 'test.Echo.Echo.failure');
    const a = await post(proxy.port, '/test.Echo/Echo', GRPC, frame('missing'));
    assert.equal(a.status, 200);
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
    }).filters.grpc;

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
