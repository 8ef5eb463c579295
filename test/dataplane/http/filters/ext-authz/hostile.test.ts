/**
 * Authorizers that misbehave: garbage in place of a CheckResponse, a frame whose length lies,
 * no grpc-status, an HTTP error, a reset stream, a closed connection, an answer past the
 * 1 MiB bound, a port that accepts and closes. None crashes the proxy; each is an error,
 * answered 403 without `failure_mode_allow` and passed with it, and the proxy keeps serving.
 * Then a fast-check run of random answer bytes and trailers. Fixed seed; `FUZZ_RUNS` sets
 * the number of requests.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import {
  type Behaviour,
  grpcAnswer,
  grpcFrame,
  helloUpstream,
  MISBEHAVING_AUTHORIZERS,
  randomGrpcAnswer,
  rawH2Server,
} from '../../../../helpers/authz-servers.js';
import { startProxy, type TestProxy } from '../../../../helpers/http-dataplane.js';
import { send } from '../../../../helpers/http-send.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 100);

/** The misbehaving authorizers both ext_authz filters meet, and a compressed frame. */
const BEHAVIOURS: Record<string, Behaviour> = {
  ...MISBEHAVING_AUTHORIZERS,
  'a compressed frame': grpcAnswer(Buffer.concat([Buffer.from([1]), grpcFrame(Buffer.alloc(0)).subarray(1)])),
};

let upstream: Awaited<ReturnType<typeof helloUpstream>>;
let behaviour: Behaviour = grpcAnswer(grpcFrame(Buffer.alloc(0)));
let authz: Awaited<ReturnType<typeof rawH2Server>>;
let closer: net.Server;
let strict: TestProxy;
let lenient: TestProxy;
let closing: TestProxy;

function proxyTo(port: number, failureModeAllow: boolean): Promise<TestProxy> {
  return startProxy(
    {
      stat_prefix: 'hostile',
      route_config: {
        virtual_hosts: [
          {
            name: 'all',
            domains: ['*'],
            routes: [{ match: { prefix: '/' }, route: { cluster: 'backend' } }],
          },
        ],
      },
      http_filters: [
        {
          name: 'proxy.filters.http.ext_authz',
          typed_config: {
            '@type': 'type.googleapis.com/envoy.config.filter.http.ext_authz.v2.ExtAuthz',
            grpc_service: { envoy_grpc: { cluster_name: 'authz' }, timeout: '4s' },
            failure_mode_allow: failureModeAllow,
          },
        },
        { name: 'envoy.router' },
      ],
    },
    [
      { raw: { name: 'backend', connect_timeout: '1s' }, addresses: [`127.0.0.1:${upstream.port}`] },
      {
        raw: { name: 'authz', connect_timeout: '1s', http2_protocol_options: {} },
        addresses: [`127.0.0.1:${port}`],
      },
    ],
  );
}

before(async () => {
  upstream = await helloUpstream();
  authz = await rawH2Server((stream) => behaviour(stream));
  closer = net.createServer((socket) => socket.destroy());
  await new Promise<void>((r) => closer.listen(0, '127.0.0.1', r));
  strict = await proxyTo(authz.port, false);
  lenient = await proxyTo(authz.port, true);
  closing = await proxyTo((closer.address() as net.AddressInfo).port, false);
});

after(async () => {
  await strict.close();
  await lenient.close();
  await closing.close();
  authz.close();
  closer.close();
  upstream.close();
});

describe('ext_authz against a hostile authorizer', () => {
  for (const [name, misbehave] of Object.entries(BEHAVIOURS)) {
    it(`${name}: 403 without failure_mode_allow, through with it`, async () => {
      behaviour = misbehave;
      const errors = strict.counter('cluster.backend.ext_authz.error');
      assert.equal((await send(strict.port, 'GET', '/x')).status, 403);
      assert.equal(strict.counter('cluster.backend.ext_authz.error'), errors + 1);
      const res = await send(lenient.port, 'GET', '/x', { 'x-current-user': 'anyone' });
      assert.equal(res.status, 200);
      assert.equal(res.body, 'Hello anyone from behind Envoy!');
    });
  }

  it('a port that accepts and closes: 403, and the proxy keeps answering', async () => {
    assert.equal((await send(closing.port, 'GET', '/x')).status, 403);
    assert.equal((await send(closing.port, 'GET', '/y')).status, 403);
    assert.equal(closing.counter('cluster.backend.ext_authz.error'), 2);
  });

  it('random answers (bytes, status, trailers) never crash it; each request gets an HTTP status', async () => {
    await fc.assert(
      fc.asyncProperty(randomGrpcAnswer, async (answer) => {
        behaviour = answer;
        const res = await send(strict.port, 'GET', '/fuzz');
        assert.ok(res.status >= 200 && res.status < 600, String(res.status));
      }),
      { seed: 29, numRuns: RUNS },
    );
    behaviour = grpcAnswer(grpcFrame(Buffer.alloc(0)));
    assert.equal(
      (await send(strict.port, 'GET', '/after', { 'x-current-user': 'me' })).body,
      'Hello me from behind Envoy!',
    );
  });
});
