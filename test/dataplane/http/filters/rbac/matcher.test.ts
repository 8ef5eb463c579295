/**
 * The HTTP RBAC filter's `matcher` and `shadow_matcher` (the unified matcher tree) in a proxy
 * process with two workers, over real sockets: the reference's RBAC sandbox
 * (fixtures/reference-examples-v3/examples/rbac/envoy.yaml) served as pasted but for where
 * things are, as its README walks it through; then a tree over a header map, a nested list
 * over a query parameter, the `Ip` custom matcher over the connection's peer, a LOG action and
 * a shadow matcher; and the refusals by name.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as http from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import type { JsonObject } from '../../../../../events/index.js';
import { Report } from '../../../../../src/bootstrap/report.js';
import { rbacFactory } from '../../../../../src/dataplane/http/filters/rbac/index.js';
import { root } from '../../../../helpers/bootstrap.js';
import { hcmWithRoutes, httpListener } from '../../../../helpers/bootstraps.js';
import { cluster, SETTLE_MS, settle } from '../../../../helpers/dataplane.js';
import { countingUpstream } from '../../../../helpers/http-send.js';
import { type ProxyProcess, startProxyProcess } from '../../../../helpers/proxy-process.js';

const ACTION = 'type.googleapis.com/envoy.config.rbac.v3.Action';
const action = (name: string, verdict: string): JsonObject => ({
  action: { name: 'action', typed_config: { '@type': ACTION, name, action: verdict } },
});
const headerInput = (header: string): JsonObject => ({
  name: 'envoy.matching.inputs.request_headers',
  typed_config: {
    '@type': 'type.googleapis.com/envoy.type.matcher.v3.HttpRequestHeaderMatchInput',
    header_name: header,
  },
});
const input = (type: string): JsonObject => ({
  name: 'input',
  typed_config: { '@type': `type.googleapis.com/envoy.extensions.matching.common_inputs.${type}` },
});

/** x-role admin: allowed; guest: allowed with ?token=ok only; ops-*: logged; anything else denied. */
const TREE: JsonObject = {
  matcher_tree: {
    input: headerInput('x-role'),
    exact_match_map: {
      map: {
        admin: action('admins', 'ALLOW'),
        guest: {
          matcher: {
            matcher_list: {
              matchers: [
                {
                  predicate: {
                    single_predicate: {
                      input: {
                        name: 'query',
                        typed_config: {
                          '@type':
                            'type.googleapis.com/envoy.type.matcher.v3.HttpRequestQueryParamMatchInput',
                          query_param: 'token',
                        },
                      },
                      value_match: { exact: 'ok' },
                    },
                  },
                  on_match: action('guest-with-token', 'ALLOW'),
                },
              ],
            },
          },
        },
      },
    },
  },
  on_no_match: {
    matcher: {
      matcher_tree: {
        input: headerInput('x-role'),
        prefix_match_map: { map: { 'ops-': action('ops', 'LOG') } },
      },
    },
  },
};

/** Would deny what comes from 127.0.0.2 to the listener's port; counted only. */
const SHADOW: JsonObject = {
  matcher_list: {
    matchers: [
      {
        predicate: {
          and_matcher: {
            predicate: [
              {
                single_predicate: {
                  input: input('network.v3.DirectSourceIPInput'),
                  custom_match: {
                    name: 'ip',
                    typed_config: {
                      '@type': 'type.googleapis.com/envoy.extensions.matching.input_matchers.ip.v3.Ip',
                      cidr_ranges: [{ address_prefix: '127.0.0.2', prefix_len: 32 }],
                      stat_prefix: 'shadow_ip',
                    },
                  },
                },
              },
              {
                not_matcher: {
                  single_predicate: {
                    input: input('network.v3.DestinationPortInput'),
                    value_match: { exact: '1' },
                  },
                },
              },
            ],
          },
        },
        on_match: action('not-from-two', 'DENY'),
      },
    ],
  },
  on_no_match: action('rest', 'ALLOW'),
};

function get(port: number, path: string, headers: Record<string, string> = {}, from = '127.0.0.1') {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.get(
      { host: '127.0.0.1', port, path, headers, localAddress: from, agent: false, timeout: 10_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on('error', reject);
  });
}

describe('envoy.filters.http.rbac matcher', () => {
  let upstream: Awaited<ReturnType<typeof countingUpstream>>;
  let proxy: ProxyProcess;
  let sandbox: number;
  let tree: number;

  before(async () => {
    upstream = await countingUpstream();
    // The sandbox as pasted, but for where things are.
    const bootstrap = parse(
      readFileSync(join(root, 'fixtures/reference-examples-v3/examples/rbac/envoy.yaml'), 'utf8'),
    ) as JsonObject & { static_resources: { listeners: JsonObject[]; clusters: JsonObject[] } };
    const [listener] = bootstrap.static_resources.listeners as Array<
      JsonObject & { filter_chains: JsonObject[] }
    >;
    Object.assign(listener!, {
      name: 'sandbox',
      address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
    });
    bootstrap.static_resources.clusters = [cluster('local_service', [upstream.port])];
    bootstrap.admin = { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } };
    bootstrap.static_resources.listeners.push({
      ...httpListener({
        ...hcmWithRoutes([{ match: { prefix: '/' }, route: { cluster: 'local_service' } }], 'tree'),
        http_filters: [
          {
            name: 'envoy.filters.http.rbac',
            typed_config: {
              '@type': 'type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC',
              matcher: TREE,
              shadow_matcher: SHADOW,
            },
          },
          { name: 'envoy.filters.http.router' },
        ],
      }),
      name: 'tree',
    });
    proxy = await startProxyProcess(bootstrap, ['--concurrency', '2']);
    sandbox = await proxy.listenerPort('sandbox');
    tree = await proxy.listenerPort('tree');
  });

  after(async () => {
    await proxy?.stop();
    upstream?.server.close();
  });

  const stat = async (name: string) =>
    Number(
      new RegExp(`^${name.replaceAll('.', '\\.')}: (\\d+)$`, 'm').exec(
        (await proxy.get('/stats')).body,
      )?.[1] ?? -1,
    );

  it('the sandbox: a request without the Referer its README names is denied 403, one with it passes, and the stats say so', async () => {
    const seen = upstream.seen.length;
    assert.deepEqual(await get(sandbox, '/'), { status: 403, body: 'RBAC: access denied' });
    assert.equal(upstream.seen.length, seen, 'the denied request never went upstream');
    const ok = await get(sandbox, '/', { referer: 'https://www.envoyproxy.io/docs/envoy' });
    assert.deepEqual(ok, { status: 200, body: 'upstream' });
    assert.equal((await get(sandbox, '/', { referer: 'https://example.com/docs/envoy' })).status, 403);
    assert.equal(await settle(() => stat('http.ingress_http.rbac.allowed'), 1, SETTLE_MS), 1);
    assert.equal(await settle(() => stat('http.ingress_http.rbac.denied'), 2, SETTLE_MS), 2);
  });

  it('an exact map, a nested list over a query parameter, a prefix map under on_no_match and a LOG action', async () => {
    assert.equal((await get(tree, '/', { 'x-role': 'admin' })).status, 200);
    assert.equal((await get(tree, '/?token=ok', { 'x-role': 'guest' })).status, 200);
    // The nested list does not match and has no on_no_match: the map's entry decides nothing,
    // the outer on_no_match has no entry for "guest", so nothing decides and the request is denied.
    assert.equal((await get(tree, '/?token=no', { 'x-role': 'guest' })).status, 403);
    assert.equal((await get(tree, '/', { 'x-role': 'ops-night' })).status, 200, 'LOG lets through');
    assert.equal((await get(tree, '/', { 'x-role': 'nobody' })).status, 403);
    assert.equal((await get(tree, '/')).status, 403, 'no header: no value, nothing decides');
  });

  it('the shadow matcher, over the peer address with the Ip matcher, counts and never enforces', async () => {
    const before2 = await stat('http.tree.rbac.shadow_denied');
    assert.equal((await get(tree, '/', { 'x-role': 'admin' }, '127.0.0.2')).status, 200);
    assert.equal(
      await settle(() => stat('http.tree.rbac.shadow_denied'), before2 + 1, SETTLE_MS),
      before2 + 1,
    );
    assert.ok((await stat('http.tree.rbac.shadow_allowed')) >= 6);
  });
});

describe('envoy.filters.http.rbac matcher refusals', () => {
  const refusals = (config: JsonObject) => {
    const report = new Report('t');
    rbacFactory.compile(config, 'rbac', report);
    return report.errors.join('\n');
  };
  const single = (inp: JsonObject, match: JsonObject = { value_match: { exact: 'x' } }): JsonObject => ({
    matcher: {
      matcher_list: {
        matchers: [
          { predicate: { single_predicate: { input: inp, ...match } }, on_match: action('a', 'ALLOW') },
        ],
      },
    },
  });

  it('names an input it does not read and says what to use instead', () => {
    assert.match(
      refusals(single(input('network.v3.TransportProtocolInput'))),
      /matchers\[0\]\.predicate\.single_predicate\.input\.typed_config: .*transport protocol input .*filter chain match on transport_protocol/,
    );
    assert.match(
      refusals(single(input('network.v3.FilterStateInput'))),
      /filter state input is not implemented/,
    );
  });

  it('refuses keep_matching, a custom tree, a custom string matcher, a foreign action and a list of one predicate', () => {
    const keep = {
      matcher: {
        matcher_list: {
          matchers: [
            {
              predicate: { single_predicate: { input: headerInput('a'), value_match: { exact: 'b' } } },
              on_match: { ...action('a', 'ALLOW'), keep_matching: true },
            },
          ],
        },
      },
    };
    assert.match(refusals(keep), /keep_matching: OnMatch\.keep_matching is not implemented/);
    assert.match(
      refusals({
        matcher: { matcher_tree: { input: headerInput('a'), custom_match: { name: 'x', typed_config: {} } } },
      }),
      /custom_match: Matcher\.MatcherTree\.custom_match is not implemented/,
    );
    assert.match(
      refusals(single(headerInput('a'), { value_match: { custom: { name: 'x' } } })),
      /value_match\.custom: StringMatcher\.custom is not implemented/,
    );
    const foreign = {
      matcher: {
        matcher_list: {
          matchers: [
            {
              predicate: { single_predicate: { input: headerInput('a'), value_match: { exact: 'b' } } },
              on_match: {
                action: { name: 'x', typed_config: { '@type': 'type.googleapis.com/google.protobuf.Empty' } },
              },
            },
          ],
        },
      },
    };
    assert.match(refusals(foreign), /google\.protobuf\.Empty is not an RBAC action/);
    const lonely = {
      matcher: {
        matcher_list: {
          matchers: [
            {
              predicate: {
                or_matcher: {
                  predicate: [{ single_predicate: { input: headerInput('a'), value_match: { exact: 'b' } } }],
                },
              },
              on_match: action('a', 'ALLOW'),
            },
          ],
        },
      },
    };
    assert.match(refusals(lonely), /or_matcher\.predicate: a PredicateList needs two or more predicates/);
  });

  it('names what is missing or malformed: no matcher kind, no typed_config, a bad range, a bad regex, no stat_prefix', () => {
    assert.match(
      refusals({ matcher: {} }),
      /rbac\.matcher: exactly one of matcher_list, matcher_tree is required/,
    );
    assert.match(
      refusals(single({ name: 'x' })),
      /input\.typed_config: a typed_config with '@type' is required/,
    );
    const ip = (cidr: JsonObject, extra: JsonObject = { stat_prefix: 's' }) =>
      single(input('network.v3.SourceIPInput'), {
        custom_match: {
          name: 'ip',
          typed_config: {
            '@type': 'type.googleapis.com/envoy.extensions.matching.input_matchers.ip.v3.Ip',
            cidr_ranges: [cidr],
            ...extra,
          },
        },
      });
    assert.match(
      refusals(ip({ address_prefix: 'nope', prefix_len: 8 })),
      /cidr_ranges\[0\]: 'nope\/8' is not a CIDR range/,
    );
    assert.match(
      refusals(ip({ address_prefix: '10.0.0.0', prefix_len: 8 }, {})),
      /stat_prefix: required field missing/,
    );
    assert.match(
      refusals(single(headerInput('a'), { value_match: { safe_regex: { regex: '(' } } })),
      /value_match/,
    );
  });

  it('warns that rules are ignored beside a matcher, as the reference ignores them', () => {
    const report = new Report('t');
    rbacFactory.compile(
      { rules: { action: 'DENY', policies: {} }, ...single(headerInput('a')) },
      'rbac',
      report,
    );
    assert.deepEqual(report.errors, []);
    assert.match(report.warnings.join('\n'), /rbac\.rules: rules is ignored: matcher is set too/);
  });
});
