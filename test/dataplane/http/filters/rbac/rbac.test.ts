/**
 * The HTTP RBAC filter over real sockets: a DENY policy set with path, header, not_rule and
 * source address rules, ALLOW shadow rules only counted, and a route whose RBACPerRoute
 * replaces them. A counting upstream on loopback shows what got through.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../../../../events/index.js';
import { Report } from '../../../../../src/bootstrap/report.js';
import { flushAccessLogs } from '../../../../../src/dataplane/access-log/file-sink.js';
import { rbacFactory } from '../../../../../src/dataplane/http/filters/rbac/index.js';
import { fileAccessLog } from '../../../../helpers/bootstraps.js';
import { startProxy, type TestProxy } from '../../../../helpers/http-dataplane.js';
import { countingUpstream, send } from '../../../../helpers/http-send.js';

let upstream: Awaited<ReturnType<typeof countingUpstream>>;
let proxy: TestProxy;

const RBAC_V3 = 'type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC';

/** A route's RBACPerRoute replacing the filter's rules with one policy: any request `principal` matches. */
const perRouteRules = (action: string, policy: string, principal: JsonObject): JsonObject => ({
  'envoy.filters.http.rbac': {
    '@type': 'type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBACPerRoute',
    rbac: {
      rules: { action, policies: { [policy]: { permissions: [{ any: true }], principals: [principal] } } },
    },
  },
});

before(async () => {
  upstream = await countingUpstream();
  proxy = await startProxy(
    {
      stat_prefix: 'ingress',
      route_config: {
        virtual_hosts: [
          {
            name: 'all',
            domains: ['*'],
            routes: [
              {
                match: { prefix: '/private' },
                route: { cluster: 'backend' },
                typed_per_filter_config: perRouteRules('ALLOW', 'admins', {
                  header: { name: 'x-user', exact_match: 'admin' },
                }),
              },
              { match: { prefix: '/' }, route: { cluster: 'backend' } },
            ],
          },
        ],
      },
      http_filters: [
        {
          name: 'envoy.filters.http.rbac',
          typed_config: {
            '@type': RBAC_V3,
            rules: {
              action: 'DENY',
              policies: {
                'no-admin': {
                  permissions: [{ url_path: { path: { prefix: '/admin' } } }],
                  principals: [{ any: true }],
                },
                'no-evil-from-loopback': {
                  permissions: [
                    {
                      and_rules: {
                        rules: [
                          { header: { name: 'x-evil', present_match: true } },
                          { not_rule: { url_path: { path: { exact: '/evil-ok' } } } },
                        ],
                      },
                    },
                  ],
                  principals: [{ remote_ip: { address_prefix: '127.0.0.0', prefix_len: 8 } }],
                },
              },
            },
            shadow_rules: {
              action: 'ALLOW',
              policies: {
                alice: {
                  permissions: [{ any: true }],
                  principals: [
                    {
                      and_ids: {
                        ids: [
                          { header: { name: 'x-user', exact_match: 'alice' } },
                          { direct_remote_ip: { address_prefix: '127.0.0.1' } },
                        ],
                      },
                    },
                  ],
                },
              },
            },
          },
        },
        { name: 'envoy.filters.http.router' },
      ],
    },
    [{ raw: { name: 'backend', connect_timeout: '1s' }, addresses: [`127.0.0.1:${upstream.port}`] }],
  );
});

after(async () => {
  await proxy.close();
  upstream.server.close();
});

describe('envoy.filters.http.rbac', () => {
  it('denies what a DENY policy matches with 403 "RBAC: access denied", and never sends it upstream', async () => {
    const denied = await send(proxy.port, 'GET', '/admin/users');
    assert.equal(denied.status, 403);
    assert.equal(denied.body, 'RBAC: access denied');
    assert.equal((await send(proxy.port, 'GET', '/x', { 'x-evil': '1' })).status, 403);
    assert.ok(!upstream.seen.some((s) => s.includes('/admin') || s === 'GET /x'));
  });

  it('passes what no DENY policy matches (and_rules with not_rule)', async () => {
    assert.equal((await send(proxy.port, 'GET', '/evil-ok', { 'x-evil': '1' })).status, 200);
    assert.equal((await send(proxy.port, 'GET', '/fine')).status, 200);
    assert.ok(upstream.seen.includes('GET /fine'));
  });

  it('counts allowed and denied, and the shadow rules without enforcing them', async () => {
    const before = {
      allowed: proxy.counter('http.ingress.rbac.allowed'),
      denied: proxy.counter('http.ingress.rbac.denied'),
      shadowAllowed: proxy.counter('http.ingress.rbac.shadow_allowed'),
      shadowDenied: proxy.counter('http.ingress.rbac.shadow_denied'),
    };
    assert.equal((await send(proxy.port, 'GET', '/a', { 'x-user': 'alice' })).status, 200);
    assert.equal((await send(proxy.port, 'GET', '/b', { 'x-user': 'bob' })).status, 200);
    assert.equal((await send(proxy.port, 'GET', '/admin', { 'x-user': 'alice' })).status, 403);
    assert.equal(proxy.counter('http.ingress.rbac.allowed') - before.allowed, 2);
    assert.equal(proxy.counter('http.ingress.rbac.denied') - before.denied, 1);
    assert.equal(proxy.counter('http.ingress.rbac.shadow_allowed') - before.shadowAllowed, 2);
    assert.equal(proxy.counter('http.ingress.rbac.shadow_denied') - before.shadowDenied, 1);
  });

  it("a route's RBACPerRoute replaces the filter's rules", async () => {
    assert.equal((await send(proxy.port, 'GET', '/private', { 'x-user': 'admin' })).status, 200);
    assert.equal((await send(proxy.port, 'GET', '/private', { 'x-user': 'alice' })).status, 403);
    // The filter's own DENY of x-evil does not apply there.
    assert.equal(
      (await send(proxy.port, 'GET', '/private', { 'x-user': 'admin', 'x-evil': '1' })).status,
      200,
    );
  });

  it('refuses malformed rules and the unimplemented ones by name', () => {
    // (requested_server_name acts: its empty matcher is the malformed part.)
    const report = new Report('t');
    rbacFactory.compile(
      {
        rules: {
          policies: {
            p: {
              permissions: [{ any: true, header: { name: 'a' } }, { requested_server_name: {} }],
              principals: [
                { authenticated: { principal_name: { exact: 'spiffe://a' }, bogus: true } },
                { remote_ip: { address_prefix: 'nope' } },
              ],
            },
            q: { permissions: [{ any: true }] },
          },
        },
        bogus: 1,
      } as never,
      'f',
      report,
    );
    assert.deepEqual(report.problems.map((p) => p.path).sort(), [
      'f.bogus',
      'f.rules.policies.p.permissions[0]',
      'f.rules.policies.p.permissions[1].requested_server_name',
      'f.rules.policies.p.principals[0].authenticated.bogus',
      'f.rules.policies.p.principals[1].remote_ip',
      'f.rules.policies.q.principals',
    ]);
  });
});

describe('RBAC stats prefixes, per-policy counters and dynamic metadata in the access log', () => {
  const logPath = join(mkdtempSync(join(tmpdir(), 'rbac-')), 'access.log');
  let own: TestProxy;
  const meta = (key: string) => `%DYNAMIC_METADATA(envoy.filters.http.rbac:${key})%`;

  before(async () => {
    own = await startProxy(
      {
        stat_prefix: 'edge',
        access_log: [
          fileAccessLog(
            logPath,
            `%REQ(:PATH)% %RESPONSE_CODE% ${meta('trial_shadow_engine_result')} ${meta('trial_shadow_effective_policy_id')} ${meta('live_enforced_engine_result')} ${meta('live_enforced_effective_policy_id')} %DYNAMIC_METADATA(envoy.common:access_log_hint)%\n`,
          ),
        ],
        route_config: {
          virtual_hosts: [
            {
              name: 'all',
              domains: ['*'],
              routes: [
                {
                  match: { prefix: '/logme' },
                  route: { cluster: 'backend' },
                  typed_per_filter_config: perRouteRules('LOG', 'audit', {
                    header: { name: 'x-audit', present_match: true },
                  }),
                },
                { match: { prefix: '/' }, route: { cluster: 'backend' } },
              ],
            },
          ],
        },
        http_filters: [
          {
            name: 'envoy.filters.http.rbac',
            typed_config: {
              '@type': RBAC_V3,
              rules_stat_prefix: 'live_',
              shadow_rules_stat_prefix: 'trial_',
              track_per_rule_stats: true,
              rules: {
                action: 'ALLOW',
                policies: {
                  readers: {
                    permissions: [{ header: { name: ':method', exact_match: 'GET' } }],
                    principals: [{ any: true }],
                  },
                },
              },
              shadow_rules: {
                action: 'DENY',
                policies: {
                  'no-bob': {
                    permissions: [{ any: true }],
                    principals: [{ header: { name: 'x-user', exact_match: 'bob' } }],
                  },
                },
              },
            },
          },
          { name: 'envoy.filters.http.router' },
        ],
      },
      [{ raw: { name: 'backend', connect_timeout: '1s' }, addresses: [`127.0.0.1:${upstream.port}`] }],
    );
  });
  after(async () => {
    await own.close();
  });

  it('names its counters after rules_stat_prefix and shadow_rules_stat_prefix, one per policy that decided', async () => {
    assert.equal((await send(own.port, 'GET', '/read', { 'x-user': 'bob' })).status, 200);
    assert.equal((await send(own.port, 'POST', '/write', { 'x-user': 'alice' })).status, 403);
    // The reference's statPrefixJoin: rbac.<rules prefix>, the shadow prefix after it.
    assert.equal(own.counter('http.edge.rbac.live_.allowed'), 1);
    assert.equal(own.counter('http.edge.rbac.live_.denied'), 1);
    assert.equal(own.counter('http.edge.rbac.live_.trial_.shadow_denied'), 1);
    assert.equal(own.counter('http.edge.rbac.live_.trial_.shadow_allowed'), 1);
    assert.equal(own.counter('http.edge.rbac.live_.policy.readers.allowed'), 1);
    assert.equal(own.counter('http.edge.rbac.live_.trial_.policy.no-bob.shadow_denied'), 1);
    // No policy matched the denied POST nor alice's shadow pass: no per-policy counter for them.
    assert.equal(own.counter('http.edge.rbac.live_.policy.readers.denied'), 0);
  });

  it('records the shadow and enforced outcomes as dynamic metadata the access log reads, refused requests too; a LOG action its hint', async () => {
    assert.equal((await send(own.port, 'GET', '/logme', { 'x-audit': '1' })).status, 200);
    assert.equal((await send(own.port, 'POST', '/logme')).status, 200);
    flushAccessLogs();
    const lines = readFileSync(logPath, 'utf8').trim().split('\n');
    assert.deepEqual(lines, [
      '/read 200 denied no-bob allowed readers -',
      '/write 403 allowed - denied - -',
      // The route's LOG rules (no shadow rules there): everything passes, the hint says which to log.
      '/logme 200 - - allowed audit true',
      '/logme 200 - - allowed - false',
    ]);
    assert.equal(own.counter('http.edge.rbac.live_.logged'), 1);
    assert.equal(own.counter('http.edge.rbac.live_.not_logged'), 1);
  });
});
