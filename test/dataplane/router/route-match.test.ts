import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { JsonObject } from '../../../events/index.js';
import type { HttpRequest } from '../../../src/dataplane/codec/request.js';
import { compileRouteMatch } from '../../../src/dataplane/router/route-match.js';

function req(path: string, headers: string[] = []): HttpRequest {
  return {
    method: 'GET',
    path,
    authority: 'h',
    scheme: 'http',
    headers,
    protocol: 'HTTP/1.1',
    remoteIp: '1.2.3.4',
    contentLength: 0,
    hasBody: false,
  };
}

/** Whether `match` takes `path` (the query kept for the query matchers, dropped for the path). */
function takes(match: JsonObject, path: string, headers: string[] = []): boolean {
  const compiled = compileRouteMatch(match, 'match');
  return compiled.matches(req(path, headers), path.split('?')[0] as string);
}

test('a path part: prefix, whole path or a full-match regex, each folded when not case_sensitive', () => {
  const cases: Array<[JsonObject, string, boolean]> = [
    [{ prefix: '/api' }, '/api/x', true],
    [{ prefix: '/api' }, '/API/x', false],
    [{ prefix: '/api', case_sensitive: false }, '/API/x', true],
    [{ path: '/exact' }, '/exact?q=1', true],
    [{ path: '/exact' }, '/exact/more', false],
    [{ safe_regex: { regex: '/re/[0-9]+' } }, '/re/123', true],
    [{ safe_regex: { regex: '/re/[0-9]+' } }, '/re/12a', false],
    [{ regex: '/old/.*' }, '/old/x', true],
  ];
  for (const [match, path, want] of cases)
    assert.equal(takes(match, path), want, `${JSON.stringify(match)} ${path}`);
  assert.equal(compileRouteMatch({ prefix: '/api' }, 'm').prefix, '/api');
  assert.equal(compileRouteMatch({ safe_regex: { regex: 'x' } }, 'm').prefix, null);
});

test('headers, grpc and query parameters must all hold beside the path', () => {
  const match = {
    prefix: '/',
    headers: [{ name: 'x-env', exact_match: 'canary' }],
    query_parameters: [{ name: 'debug', present_match: true }],
  };
  assert.equal(takes(match, '/a?debug=1', ['x-env', 'canary']), true);
  assert.equal(takes(match, '/a', ['x-env', 'canary']), false);
  assert.equal(takes(match, '/a?debug=1', ['x-env', 'prod']), false);
  const grpc = { prefix: '/', grpc: {} };
  for (const type of ['application/grpc', 'application/grpc+proto', 'application/grpc;charset=utf-8'])
    assert.equal(takes(grpc, '/svc/M', ['content-type', type]), true, type);
  for (const type of ['application/grpc-web', 'application/json'])
    assert.equal(takes(grpc, '/svc/M', ['content-type', type]), false, type);
  assert.equal(takes(grpc, '/svc/M'), false);
});

test('a match without a path part, or with a bad regex or header matcher, names its field', () => {
  assert.throws(
    () => compileRouteMatch({}, 'r.match'),
    /r\.match: a route match needs one of prefix, path, safe_regex/,
  );
  assert.throws(
    () => compileRouteMatch({ safe_regex: { regex: '(a' } }, 'r.match'),
    /r\.match\.safe_regex: invalid regex/,
  );
  assert.throws(
    () => compileRouteMatch({ prefix: '/', headers: [{ exact_match: 'x' }] }, 'r.match'),
    /r\.match\.headers\[0\]\.name: a header matcher needs a header name/,
  );
});

test('any request path a peer sends is matched or not, never a throw', () => {
  const match = compileRouteMatch(
    { prefix: '/', case_sensitive: false, query_parameters: [{ name: 'q', string_match: { exact: 'x' } }] },
    'm',
  );
  fc.assert(
    fc.property(fc.string({ maxLength: 200 }), (path) => {
      assert.equal(typeof match.matches(req(path), path.split('?')[0] as string), 'boolean');
    }),
    { seed: 11, numRuns: Number(process.env.FUZZ_RUNS ?? 500) },
  );
});

test("a header matcher's v3 string_match (Envoy Gateway's and Istio's routes): each kind, ignore_case, invert, a missing header", () => {
  const header = (string_match: JsonObject, extra: JsonObject = {}) => ({
    prefix: '/',
    headers: [{ name: 'x-verb', string_match, ...extra }],
  });
  const method = (m: string) => ['x-verb', m];
  assert.equal(takes(header({ exact: 'GET' }), '/', method('GET')), true);
  assert.equal(takes(header({ exact: 'GET' }), '/', method('get')), false);
  assert.equal(takes(header({ exact: 'GET', ignore_case: true }), '/', method('get')), true);
  assert.equal(takes(header({ prefix: 'PO' }), '/', method('POST')), true);
  assert.equal(takes(header({ suffix: 'ST' }), '/', method('POST')), true);
  assert.equal(takes(header({ safe_regex: { regex: '^P(UT|OST)$' } }), '/', method('PUT')), true);
  assert.equal(takes(header({ exact: 'GET' }, { invert_match: true }), '/', method('GET')), false);
  const missing = { prefix: '/', headers: [{ name: 'x-absent', string_match: { prefix: '' } }] };
  assert.equal(takes(missing, '/', method('GET')), false);
  assert.throws(() => compileRouteMatch(header({ safe_regex: { regex: '(' } }), 'match'), /string_match/);
});
