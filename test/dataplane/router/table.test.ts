import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { HttpRequest } from '../../../src/dataplane/codec/request.js';
import { findRoute, pickWeighted, redirectLocation } from '../../../src/dataplane/router/lookup.js';
import { compileRouteTable } from '../../../src/dataplane/router/table.js';
import { compileTestRoutes, findingsOf } from '../../helpers/compile.js';

function req(authority: string, path: string, headers: string[] = []): HttpRequest {
  return {
    method: 'GET',
    path,
    authority,
    scheme: 'http',
    headers,
    protocol: 'HTTP/1.1',
    remoteIp: '1.2.3.4',
    contentLength: 0,
    hasBody: false,
  };
}

const table = compileTestRoutes({
  virtual_hosts: [
    {
      name: 'exact',
      domains: ['api.example.com'],
      routes: [{ match: { prefix: '/' }, route: { cluster: 'exact' } }],
    },
    {
      name: 'suffix',
      domains: ['*.example.com'],
      routes: [{ match: { prefix: '/' }, route: { cluster: 'suffix' } }],
    },
    {
      name: 'longer',
      domains: ['*.b.example.com'],
      routes: [{ match: { prefix: '/' }, route: { cluster: 'longer' } }],
    },
    {
      name: 'prefix',
      domains: ['foo.*'],
      routes: [{ match: { prefix: '/' }, route: { cluster: 'prefix' } }],
    },
    {
      name: 'any',
      domains: ['*'],
      routes: [
        { match: { path: '/exact' }, route: { cluster: 'path' } },
        { match: { safe_regex: { google_re2: {}, regex: '/re/[0-9]+' } }, route: { cluster: 'regex' } },
        { match: { prefix: '/CI', case_sensitive: false }, route: { cluster: 'ci' } },
        {
          match: { prefix: '/h', headers: [{ name: 'x-env', exact_match: 'canary' }] },
          route: { cluster: 'canary' },
        },
        {
          match: { prefix: '/h', headers: [{ name: 'x-skip', present_match: true, invert_match: true }] },
          route: { cluster: 'noskip' },
        },
        { match: { prefix: '/' }, route: { cluster: 'default', timeout: '0s' } },
      ],
    },
  ],
});

const cluster = (r: HttpRequest) => {
  const hit = findRoute(table, r);
  return hit && hit.route.action.kind === 'cluster' ? hit.route.action.cluster : null;
};

test('virtual hosts: exact, longest suffix, prefix, then *; port ignored when needed', () => {
  assert.equal(cluster(req('api.example.com', '/')), 'exact');
  assert.equal(cluster(req('api.example.com:8080', '/')), 'exact');
  assert.equal(cluster(req('x.example.com', '/')), 'suffix');
  assert.equal(cluster(req('a.b.example.com', '/')), 'longer');
  assert.equal(cluster(req('foo.bar', '/')), 'prefix');
  assert.equal(cluster(req('other', '/')), 'default');
});

test('two virtual hosts may share a name (the reference checks only domains), each routing its own', () => {
  const vh = (domain: string, to: string) => ({
    name: 'same',
    domains: [domain],
    routes: [{ match: { prefix: '/' }, route: { cluster: to } }],
  });
  const raw = { virtual_hosts: [vh('a.example', 'a'), vh('b.example', 'b')] };
  assert.deepEqual(
    findingsOf((r) => compileRouteTable(raw, 'route_config', r)),
    [],
  );
  const shared = compileTestRoutes(raw);
  const to = (authority: string) => {
    const hit = findRoute(shared, req(authority, '/'));
    return hit && hit.route.action.kind === 'cluster' ? hit.route.action.cluster : null;
  };
  assert.equal(to('a.example'), 'a');
  assert.equal(to('b.example'), 'b');
});

test('path, regex (full match), case-insensitive prefix and header matchers', () => {
  assert.equal(cluster(req('h', '/exact?q=1')), 'path');
  assert.equal(cluster(req('h', '/exact/more')), 'default');
  assert.equal(cluster(req('h', '/re/123')), 'regex');
  assert.equal(cluster(req('h', '/re/12a')), 'default');
  assert.equal(cluster(req('h', '/ci/x')), 'ci');
  assert.equal(cluster(req('h', '/h', ['x-env', 'canary'])), 'canary');
  assert.equal(cluster(req('h', '/h')), 'noskip');
  assert.equal(cluster(req('h', '/h', ['x-skip', '1'])), 'default');
  assert.equal(findRoute(table, req('h', '/'))?.route.timeoutMs, 0);
  assert.equal(findRoute(table, req('h', '/exact'))?.route.timeoutMs, 15000);
});

test('invalid config names the field', () => {
  const errors = findingsOf((r) =>
    compileRouteTable(
      { virtual_hosts: [{ domains: ['*'], routes: [{ match: { prefix: '/' } }] }] },
      'route_config',
      r,
    ),
  );
  assert.match(errors.join('\n'), /route_config\.virtual_hosts\[0\]\.routes\[0\]: a route needs one of/);
  const regex = findingsOf((r) =>
    compileRouteTable(
      {
        virtual_hosts: [
          { domains: ['*'], routes: [{ match: { safe_regex: { regex: '(a' } }, route: { cluster: 'x' } }] },
        ],
      },
      'route_config',
      r,
    ),
  );
  assert.match(regex.join('\n'), /routes\[0\]\.match\.safe_regex: invalid regex/);
});

test('every bad route is reported, not only the first', () => {
  const errors = findingsOf((r) =>
    compileRouteTable(
      {
        virtual_hosts: [
          {
            domains: ['*'],
            routes: [
              {
                match: { prefix: '/a' },
                route: { weighted_clusters: { clusters: [{ name: 'a', weight: 1 }], total_weight: 100 } },
              },
              {
                match: { prefix: '/b' },
                route: { cluster: 'b' },
                request_headers_to_add: [{ header: { key: 'x', value: '%NOT_A_VARIABLE%' } }],
              },
              { match: { prefix: '/c' }, route: { cluster: 'c', auto_host_rewrite: true } },
            ],
          },
        ],
      },
      'route_config',
      r,
    ),
  );
  assert.equal(errors.length, 3, errors.join('\n'));
  assert.match(
    errors[0] ?? '',
    /routes\[0\]\.route\.weighted_clusters\.total_weight: is 100 but the cluster weights add up to 1/,
  );
  assert.match(errors[1] ?? '', /routes\[1\]\.request_headers_to_add\[0\]\.header\.value: .*NOT_A_VARIABLE/);
  assert.match(
    errors[2] ?? '',
    /routes\[2\]\.route\.auto_host_rewrite: auto_host_rewrite .* is not implemented/,
  );
});

test('weighted pick and redirect location', () => {
  const action = {
    clusters: [
      { name: 'a', weight: 1, metadataMatch: null },
      { name: 'b', weight: 3, metadataMatch: null },
    ],
    totalWeight: 4,
  };
  assert.equal(pickWeighted(action, 0.1).name, 'a');
  assert.equal(pickWeighted(action, 0.3).name, 'b');
  const t = compileTestRoutes({
    virtual_hosts: [
      {
        domains: ['*'],
        routes: [
          {
            match: { prefix: '/old' },
            redirect: { https_redirect: true, prefix_rewrite: '/new', response_code: 'FOUND' },
          },
        ],
      },
    ],
  });
  const hit = findRoute(t, req('site:8080', '/old/page?x=1'));
  assert.ok(hit && hit.route.action.kind === 'redirect');
  assert.equal(hit.route.action.status, 302);
  assert.equal(
    redirectLocation(hit.route.action, hit.route, req('site:8080', '/old/page?x=1')),
    'https://site/new/page?x=1',
  );
});
