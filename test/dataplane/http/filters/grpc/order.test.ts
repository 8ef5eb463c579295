/**
 * The gRPC filters at their place in `http_filters`, over real sockets: a filter listed before
 * grpc_web sees the gRPC-Web request as the client sent it, so its answer is plain text (the
 * reference's local reply to a request that is not yet gRPC); listed after, it sees the gRPC
 * request grpc_web made, so its answer is a gRPC one that grpc_web then translates
 * (`application/grpc-web+proto`, the status in `grpc-status`).
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { frame, post } from '../../../../helpers/grpc-upstream.js';
import { startProxy, type TestProxy } from '../../../../helpers/http-dataplane.js';

const DENY_ALL = {
  name: 'envoy.filters.http.rbac',
  typed_config: {
    '@type': 'type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC',
    rules: {
      action: 'DENY',
      policies: { all: { permissions: [{ any: true }], principals: [{ any: true }] } },
    },
  },
};
const GRPC_WEB = { name: 'envoy.filters.http.grpc_web' };

const proxies: TestProxy[] = [];

async function proxyWith(filters: object[]): Promise<TestProxy> {
  const proxy = await startProxy(
    {
      stat_prefix: 'web',
      route_config: {
        virtual_hosts: [
          { name: 'all', domains: ['*'], routes: [{ match: { prefix: '/' }, route: { cluster: 'grpc' } }] },
        ],
      },
      http_filters: [...filters, { name: 'envoy.filters.http.router' }],
    },
    [{ raw: { name: 'grpc', connect_timeout: '1s', http2_protocol_options: {} }, addresses: [] }],
  );
  proxies.push(proxy);
  return proxy;
}

after(async () => {
  for (const p of proxies) await p.close();
});

const call = (proxy: TestProxy) =>
  post(proxy.port, '/test.Echo/Echo', { 'content-type': 'application/grpc-web' }, frame('hi'));

describe('a filter that answers, before or after grpc_web', () => {
  it('before it: answers the gRPC-Web request in plain text', async () => {
    const a = await call(await proxyWith([DENY_ALL, GRPC_WEB]));
    assert.equal(a.status, 403);
    assert.equal(a.headers['content-type'], 'text/plain');
    assert.equal(a.headers['grpc-status'], undefined);
    assert.equal(a.body.toString(), 'RBAC: access denied');
  });

  it('after it: answers the gRPC request grpc_web made, translated back to gRPC-Web', async () => {
    const a = await call(await proxyWith([GRPC_WEB, DENY_ALL]));
    assert.equal(a.status, 200);
    assert.equal(a.headers['content-type'], 'application/grpc-web+proto');
    assert.equal(a.headers['grpc-status'], '7');
    assert.equal(a.headers['grpc-message'], 'RBAC: access denied');
  });
});
