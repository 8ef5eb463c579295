/**
 * `envoy.filters.network.rbac` over real sockets, in a proxy process with two workers: before a
 * TCP proxy it lets in one source address and closes others unanswered; before an HCM on an
 * mTLS chain it lets in one client certificate and closes the connection of another.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../../events/index.js';
import { Report } from '../../../src/bootstrap/report.js';
import { compileNetworkRbac } from '../../../src/dataplane/network-filters/rbac.js';
import { cluster, SETTLE_MS, settle, tcpServer } from '../../helpers/dataplane.js';
import { answeringRoutes } from '../../helpers/http-dataplane.js';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';
import { type Issued, makePki, type TestPki } from '../../tls/certs.js';
import { httpsGet } from '../../tls/helpers.js';

const action = (name: string, verdict: string): JsonObject => ({
  action: {
    name,
    typed_config: { '@type': 'type.googleapis.com/envoy.config.rbac.v3.Action', name, action: verdict },
  },
});
const input = (type: string): JsonObject => ({
  name: type,
  typed_config: { '@type': `type.googleapis.com/envoy.extensions.matching.common_inputs.${type}` },
});

const allowOnly = (principal: JsonObject): JsonObject => ({
  action: 'ALLOW',
  policies: { only: { permissions: [{ any: true }], principals: [principal] } },
});

/** Connects from `from`, writes `payload`, half-closes, and collects what comes back until close. */
function exchangeFrom(port: number, from: string, payload: string): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = net.connect({ port, host: '127.0.0.1', localAddress: from, allowHalfOpen: true });
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => {});
    socket.setTimeout(5000, () => socket.destroy());
    socket.on('close', () => resolve(Buffer.concat(chunks).toString()));
    socket.end(payload);
  });
}

describe('envoy.filters.network.rbac', () => {
  let pki: TestPki;
  let proxy: ProxyProcess;
  let upstream: Awaited<ReturnType<typeof tcpServer>>;
  const client = new Map<string, Issued>();

  before(async () => {
    pki = makePki();
    const server = pki.leaf('proxy.test', ['DNS:proxy.test']);
    client.set('allowed', pki.leaf('allowed', ['URI:spiffe://test/allowed']));
    client.set('other', pki.leaf('other', ['URI:spiffe://test/other']));
    upstream = await tcpServer((socket) => {
      const chunks: Buffer[] = [];
      socket.on('data', (c: Buffer) => chunks.push(c));
      socket.on('end', () => socket.end(Buffer.concat([Buffer.from('echo:'), ...chunks])));
    });
    const listener = (name: string, filters: JsonObject[], chain: JsonObject = {}): JsonObject => ({
      name,
      address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
      filter_chains: [{ ...chain, filters }],
    });
    const toEcho: JsonObject = {
      name: 'envoy.tcp_proxy',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.config.filter.network.tcp_proxy.v2.TcpProxy',
        stat_prefix: 'echo',
        cluster: 'echo',
      },
    };
    /** An mTLS listener whose chain is `rbac`, then an HCM answering `in`. */
    const mtlsListener = (name: string, rbac: JsonObject): JsonObject =>
      listener(
        name,
        [
          rbac,
          {
            name: 'envoy.http_connection_manager',
            config: {
              stat_prefix: name,
              route_config: answeringRoutes('in'),
              http_filters: [{ name: 'envoy.router' }],
            },
          },
        ],
        {
          tls_context: {
            common_tls_context: {
              tls_certificates: [
                { certificate_chain: { filename: server.cert }, private_key: { filename: server.key } },
              ],
              validation_context: { trusted_ca: { filename: pki.ca.cert } },
            },
          },
        },
      );
    proxy = await startProxyProcess(
      {
        admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
        static_resources: {
          clusters: [cluster('echo', [upstream.port])],
          listeners: [
            listener('tcp', [
              {
                name: 'envoy.filters.network.rbac',
                typed_config: {
                  '@type': 'type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC',
                  stat_prefix: 'tcp.',
                  rules: allowOnly({ source_ip: { address_prefix: '127.0.0.2', prefix_len: 32 } }),
                  // Counted only: the destination port is the listener's, never 1.
                  shadow_rules: {
                    action: 'ALLOW',
                    policies: { p: { permissions: [{ destination_port: 1 }], principals: [{ any: true }] } },
                  },
                },
              },
              toEcho,
            ]),
            listener('tcp-matcher', [
              {
                name: 'envoy.filters.network.rbac',
                typed_config: {
                  '@type': 'type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC',
                  stat_prefix: 'tcpm.',
                  matcher: {
                    matcher_list: {
                      matchers: [
                        {
                          predicate: {
                            single_predicate: {
                              input: input('network.v3.SourceIPInput'),
                              custom_match: {
                                name: 'ip',
                                typed_config: {
                                  '@type':
                                    'type.googleapis.com/envoy.extensions.matching.input_matchers.ip.v3.Ip',
                                  cidr_ranges: [{ address_prefix: '127.0.0.2', prefix_len: 32 }],
                                  stat_prefix: 'tcpm_ip',
                                },
                              },
                            },
                          },
                          on_match: action('from-two', 'ALLOW'),
                        },
                      ],
                    },
                    on_no_match: action('rest', 'DENY'),
                  },
                },
              },
              toEcho,
            ]),
            mtlsListener('mtls-matcher', {
              name: 'envoy.filters.network.rbac',
              typed_config: {
                '@type': 'type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC',
                stat_prefix: 'mtlsm.',
                // No on_no_match: a peer without that URI SAN (or any certificate) is denied.
                matcher: {
                  matcher_tree: {
                    input: input('ssl.v3.UriSanInput'),
                    exact_match_map: { map: { 'spiffe://test/allowed': action('allowed', 'ALLOW') } },
                  },
                },
              },
            }),
            // By the server name the client asked for: a matcher over it, and a permission.
            mtlsListener('sni-matcher', {
              name: 'envoy.filters.network.rbac',
              typed_config: {
                '@type': 'type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC',
                stat_prefix: 'snim.',
                matcher: {
                  matcher_tree: {
                    input: input('network.v3.ServerNameInput'),
                    exact_match_map: { map: { 'proxy.test': action('by-name', 'ALLOW') } },
                  },
                },
              },
            }),
            mtlsListener('sni-rules', {
              name: 'envoy.filters.network.rbac',
              typed_config: {
                '@type': 'type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC',
                stat_prefix: 'snir.',
                rules: {
                  action: 'ALLOW',
                  policies: {
                    byName: {
                      permissions: [{ requested_server_name: { suffix: '.test', ignore_case: true } }],
                      principals: [{ any: true }],
                    },
                  },
                },
              },
            }),
            // Denied connections held 300 ms before they are closed; shadow stats under their own prefix.
            listener('tcp-delay', [
              {
                name: 'envoy.filters.network.rbac',
                typed_config: {
                  '@type': 'type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC',
                  stat_prefix: 'tcpd.',
                  shadow_rules_stat_prefix: 'trial',
                  delay_deny: '0.3s',
                  rules: allowOnly({ source_ip: { address_prefix: '127.0.0.2', prefix_len: 32 } }),
                  shadow_rules: allowOnly({ source_ip: { address_prefix: '127.0.0.2', prefix_len: 32 } }),
                },
              },
              toEcho,
            ]),
            mtlsListener('mtls', {
              name: 'envoy.filters.network.rbac',
              config: {
                stat_prefix: 'mtls.',
                rules: allowOnly({
                  authenticated: { principal_name: { exact: 'spiffe://test/allowed' } },
                }),
              },
            }),
          ],
        },
      },
      ['--concurrency', '2'],
    );
  });

  after(async () => {
    await proxy?.stop();
    await upstream?.close();
    pki?.remove();
  });

  const stat = async (name: string) => {
    const body = (await proxy.get('/stats')).body;
    return Number(new RegExp(`^${name.replaceAll('.', '\\.')}: (\\d+)$`, 'm').exec(body)?.[1] ?? -1);
  };

  it('relays a connection from the allowed source and closes one from another unanswered', async () => {
    const port = await proxy.listenerPort('tcp');
    assert.equal(await exchangeFrom(port, '127.0.0.2', 'hi'), 'echo:hi');
    assert.equal(await exchangeFrom(port, '127.0.0.1', 'hi'), '');
    assert.equal(await settle(() => stat('tcp.rbac.allowed'), 1, SETTLE_MS), 1);
    assert.equal(await settle(() => stat('tcp.rbac.denied'), 1, SETTLE_MS), 1);
    assert.equal(await settle(() => stat('tcp.rbac.shadow_denied'), 2, SETTLE_MS), 2);
    assert.equal(await settle(() => stat('tcp.rbac.shadow_allowed'), 0, SETTLE_MS), 0);
  });

  it('delay_deny holds a denied connection before closing it; shadow_rules_stat_prefix names the shadow counters', async () => {
    const port = await proxy.listenerPort('tcp-delay');
    assert.equal(await exchangeFrom(port, '127.0.0.2', 'hi'), 'echo:hi');
    const started = Date.now();
    assert.equal(await exchangeFrom(port, '127.0.0.1', 'hi'), '');
    const held = Date.now() - started;
    assert.ok(held >= 250, `closed after ${held} ms`);
    assert.equal(await settle(() => stat('tcpd.rbac.denied'), 1, SETTLE_MS), 1);
    assert.equal(await settle(() => stat('tcpd.rbac.trial.shadow_denied'), 1, SETTLE_MS), 1);
    assert.equal(await settle(() => stat('tcpd.rbac.trial.shadow_allowed'), 1, SETTLE_MS), 1);
  });

  it('a matcher: the Ip matcher over the source address lets in one and on_no_match DENY closes another', async () => {
    const port = await proxy.listenerPort('tcp-matcher');
    assert.equal(await exchangeFrom(port, '127.0.0.2', 'hi'), 'echo:hi');
    assert.equal(await exchangeFrom(port, '127.0.0.1', 'hi'), '');
    assert.equal(await settle(() => stat('tcpm.rbac.allowed'), 1, SETTLE_MS), 1);
    assert.equal(await settle(() => stat('tcpm.rbac.denied'), 1, SETTLE_MS), 1);
  });

  for (const [name, statPrefix] of [
    ['mtls', 'mtls'],
    ['mtls-matcher', 'mtlsm'],
  ] as const)
    it(`${name}: lets in the client certificate the ${name === 'mtls' ? 'policy' : 'matcher'} names and closes the connection of another`, async () => {
      const port = await proxy.listenerPort(name);
      const get = (name: string) => {
        const cert = client.get(name) as Issued;
        return httpsGet(port, {
          servername: 'proxy.test',
          ca: pki.ca.certPem,
          cert: cert.certPem,
          key: cert.keyPem,
        });
      };
      assert.deepEqual(await get('allowed'), { status: 200, body: 'in', cn: 'proxy.test' });
      await assert.rejects(get('other'));
      assert.equal(await settle(() => stat(`${statPrefix}.rbac.allowed`), 1, SETTLE_MS), 1);
      assert.equal(await settle(() => stat(`${statPrefix}.rbac.denied`), 1, SETTLE_MS), 1);
    });

  for (const name of ['sni-matcher', 'sni-rules'])
    it(`${name}: lets in the client that asked for the server name, closes one that asked for another or none`, async () => {
      const port = await proxy.listenerPort(name);
      const cert = client.get('allowed') as Issued;
      // The server's certificate is for proxy.test: the other names skip the client's check of it.
      const get = (servername: string | undefined, extra: object = {}) =>
        httpsGet(port, {
          ca: pki.ca.certPem,
          cert: cert.certPem,
          key: cert.keyPem,
          ...(servername === undefined ? {} : { servername }),
          checkServerIdentity: () => undefined,
          ...extra,
        });
      assert.equal((await get(name === 'sni-rules' ? 'PROXY.test' : 'proxy.test')).status, 200);
      await assert.rejects(get(name === 'sni-rules' ? 'other.example' : 'other.test'));
      // No SNI at all (an IP address is never sent as a server name).
      await assert.rejects(get(undefined, { servername: '' }));
    });

  it("refuses a matcher's HTTP inputs by name, as the reference", () => {
    const report = new Report('t');
    compileNetworkRbac(
      {
        stat_prefix: 'x.',
        matcher: {
          matcher_list: {
            matchers: [
              {
                predicate: {
                  single_predicate: {
                    input: {
                      name: 'h',
                      typed_config: {
                        '@type': 'type.googleapis.com/envoy.type.matcher.v3.HttpRequestHeaderMatchInput',
                        header_name: 'a',
                      },
                    },
                    value_match: { exact: 'b' },
                  },
                },
                on_match: action('a', 'ALLOW'),
              },
            ],
          },
        },
      },
      'f',
      report,
    );
    assert.match(
      report.errors.join('\n'),
      /f\.matcher\.matcher_list\.matchers\[0\]\.predicate\.single_predicate\.input\.typed_config: .*can not be used in the network RBAC filter/,
    );
  });

  it('refuses the HTTP-only rules, CONTINUOUS enforcement and a missing stat_prefix by name', () => {
    const report = new Report('t');
    compileNetworkRbac(
      {
        enforcement_type: 'CONTINUOUS',
        rules: {
          policies: {
            p: {
              permissions: [{ url_path: { path: { exact: '/' } } }],
              principals: [{ or_ids: { ids: [{ header: { name: 'x', exact_match: 'y' } }] } }],
            },
          },
        },
      },
      'f',
      report,
    );
    assert.deepEqual(report.problems.map((p) => p.path).sort(), [
      'f.enforcement_type',
      'f.rules.policies.p.permissions[0].url_path',
      'f.rules.policies.p.principals[0].or_ids.ids[0].header',
      'f.stat_prefix',
    ]);
  });
});
