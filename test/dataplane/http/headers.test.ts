import assert from 'node:assert/strict';
import { test } from 'node:test';
import { downstreamResponseHeaders, upstreamRequestHead } from '../../../src/dataplane/http/headers.js';
import type { HttpRequest } from '../../../src/dataplane/http/request.js';
import type { CompiledRoute } from '../../../src/dataplane/router/table.js';

function request(headers: string[]): HttpRequest {
  return {
    method: 'POST',
    path: '/api/v1/items?x=1',
    authority: 'front.example',
    scheme: 'http',
    headers,
    protocol: 'HTTP/1.1',
    remoteIp: '10.0.0.9',
    contentLength: 3,
    hasBody: true,
  };
}

function route(
  rewrites: Partial<Pick<CompiledRoute, 'prefix' | 'prefixRewrite' | 'hostRewrite'>>,
): CompiledRoute {
  return { prefix: null, prefixRewrite: null, hostRewrite: null, ...rewrites } as CompiledRoute;
}

const options = { localAddress: '127.0.0.1', generateRequestId: false };

test('x-forwarded-for gets the peer appended to every earlier value; x-forwarded-proto is replaced', () => {
  const head = upstreamRequestHead(
    request([
      'x-forwarded-for',
      '1.1.1.1',
      'accept',
      '*/*',
      'x-forwarded-for',
      '2.2.2.2',
      'x-forwarded-proto',
      'https',
    ]),
    route({}),
    options,
  );
  assert.deepEqual(head.headers, [
    'accept',
    '*/*',
    'x-forwarded-for',
    '1.1.1.1, 2.2.2.2, 10.0.0.9',
    'x-forwarded-proto',
    'http',
  ]);
  assert.deepEqual(
    { method: head.method, path: head.path, authority: head.authority, length: head.contentLength },
    { method: 'POST', path: '/api/v1/items?x=1', authority: 'front.example', length: 3 },
  );
});

test('x-request-id is added only when asked and absent', () => {
  const added = upstreamRequestHead(request([]), route({}), { ...options, generateRequestId: true });
  const id = added.headers[added.headers.indexOf('x-request-id') + 1];
  assert.match(id ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  const kept = upstreamRequestHead(request(['x-request-id', 'abc']), route({}), {
    ...options,
    generateRequestId: true,
  });
  assert.deepEqual(
    kept.headers.filter((_, i) => kept.headers[i - (i % 2)] === 'x-request-id'),
    ['x-request-id', 'abc'],
  );
});

test('prefix and host rewrites apply to the path and the authority', () => {
  const head = upstreamRequestHead(
    request([]),
    route({ prefix: '/api/v1', prefixRewrite: '/v2', hostRewrite: 'back.internal' }),
    options,
  );
  assert.equal(head.path, '/v2/items?x=1');
  assert.equal(head.authority, 'back.internal');
});

test('the peer-less request is forwarded for the proxy itself', () => {
  const head = upstreamRequestHead({ ...request([]), remoteIp: '' }, route({}), options);
  assert.equal(head.headers[head.headers.indexOf('x-forwarded-for') + 1], '127.0.0.1');
});

test('response headers lose hop-by-hop headers, the length and the upstream server name', () => {
  assert.deepEqual(
    downstreamResponseHeaders(
      [
        'connection',
        'keep-alive',
        'content-type',
        'text/plain',
        'content-length',
        '2',
        'server',
        'nginx',
        'transfer-encoding',
        'chunked',
        'x-a',
        '1',
      ],
      'proxy',
    ),
    ['content-type', 'text/plain', 'x-a', '1', 'server', 'proxy'],
  );
});
