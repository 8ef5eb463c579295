/**
 * `envoy.filters.network.ext_authz` in the real process (`--concurrency 2`), over real sockets:
 * a real gRPC authorizer (`@grpc/grpc-js`, v2 and v3 `Authorization/Check`) decides each
 * connection of a TCP proxy chain by its source address when its first bytes arrive, as the
 * reference's `onData` (it checked at open: an upstream that speaks first was not heard before the
 * verdict, and a connection that never spoke was checked); a denied one is closed unanswered; an
 * authorizer that cannot be reached closes it, or lets it through with `failure_mode_allow`;
 * over mTLS it asks with the peer's principal and, with `include_peer_certificate`, its certificate.
 * Stats under `ext_authz.<stat_prefix>.`.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as tls from 'node:tls';
import type { JsonObject } from '../../../../events/index.js';
import { Report } from '../../../../src/bootstrap/report.js';
import { networkExtAuthzFactory } from '../../../../src/dataplane/network-filters/ext-authz/index.js';
import { type Message, unaryServer } from '../../../helpers/authz-servers.js';
import { closedPort, cluster, SETTLE_MS, settle, tcpServer } from '../../../helpers/dataplane.js';
import { type ProxyProcess, startProxyProcess } from '../../../helpers/proxy-process.js';
import { type Issued, makePki, type TestPki } from '../../../tls/certs.js';

const PATHS = ['/envoy.service.auth.v2.Authorization/Check', '/envoy.service.auth.v3.Authorization/Check'];
/** Generous for a loaded machine: the check must not time out by accident. */
const TIMEOUT = '10s';

/** Allows connections from 127.0.0.2 or the mTLS peer `spiffe://test/allowed` (code 7, PERMISSION_DENIED, otherwise). */
function decide(request: Message): Message {
  const source = request.attributes?.source;
  const allowed =
    source?.address?.socket_address?.address === '127.0.0.2' || source?.principal === 'spiffe://test/allowed';
  return { status: { code: allowed ? 0 : 7 } };
}

/** Over mTLS with `client`'s certificate: writes, half-closes, and collects what came back. */
function exchangeTls(port: number, pki: TestPki, client: Issued): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = tls.connect({
      port,
      host: '127.0.0.1',
      servername: 'proxy.test',
      ca: pki.ca.certPem,
      cert: client.certPem,
      key: client.keyPem,
    });
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => {});
    socket.setTimeout(15_000, () => socket.destroy());
    socket.on('close', () => resolve(Buffer.concat(chunks).toString()));
    socket.on('secureConnect', () => socket.end('hi'));
  });
}

/** Connects from `from`, writes, half-closes: what came back before the close. */
function exchangeFrom(port: number, from: string): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = net.connect({ port, host: '127.0.0.1', localAddress: from, allowHalfOpen: true });
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => {});
    socket.setTimeout(15_000, () => socket.destroy());
    socket.on('close', () => resolve(Buffer.concat(chunks).toString()));
    socket.end('hi');
  });
}

/** Connects from `from`, waits for the upstream's greeting, says `hi` and half-closes: all it heard. */
function greetedThenSay(port: number, from: string): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = net.connect({ port, host: '127.0.0.1', localAddress: from, allowHalfOpen: true });
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      if (chunks.length === 1) socket.end('hi');
    });
    socket.on('error', () => {});
    socket.setTimeout(15_000, () => socket.destroy());
    socket.on('close', () => resolve(Buffer.concat(chunks).toString()));
  });
}

function listener(name: string, authz: JsonObject, chain: JsonObject = {}, cluster = 'echo'): JsonObject {
  return {
    name,
    address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
    filter_chains: [
      {
        ...chain,
        filters: [
          {
            name: 'envoy.filters.network.ext_authz',
            typed_config: {
              '@type': 'type.googleapis.com/envoy.extensions.filters.network.ext_authz.v3.ExtAuthz',
              ...authz,
            },
          },
          {
            name: 'envoy.tcp_proxy',
            typed_config: {
              '@type': 'type.googleapis.com/envoy.config.filter.network.tcp_proxy.v2.TcpProxy',
              stat_prefix: 'echo',
              cluster,
            },
          },
        ],
      },
    ],
  };
}

describe('envoy.filters.network.ext_authz', () => {
  let upstream: Awaited<ReturnType<typeof tcpServer>>;
  /** An upstream that speaks first (`hello`), and what each of its connections heard. */
  let greeter: Awaited<ReturnType<typeof tcpServer>>;
  const greeted: string[] = [];
  let authz: Awaited<ReturnType<typeof unaryServer>>;
  let proxy: ProxyProcess;
  let pki: TestPki;
  const clients = new Map<string, Issued>();

  before(async () => {
    pki = makePki();
    const server = pki.leaf('proxy.test', ['DNS:proxy.test']);
    clients.set('allowed', pki.leaf('allowed', ['URI:spiffe://test/allowed']));
    clients.set('other', pki.leaf('other', ['URI:spiffe://test/other']));
    const mtls = {
      tls_context: {
        common_tls_context: {
          tls_certificates: [
            { certificate_chain: { filename: server.cert }, private_key: { filename: server.key } },
          ],
          validation_context: { trusted_ca: { filename: pki.ca.cert } },
        },
        require_client_certificate: true,
      },
    };
    upstream = await tcpServer((socket) => {
      const chunks: Buffer[] = [];
      socket.on('data', (c: Buffer) => chunks.push(c));
      socket.on('end', () => socket.end(Buffer.concat([Buffer.from('echo:'), ...chunks])));
    });
    greeter = await tcpServer((socket) => {
      const chunks: Buffer[] = [];
      socket.write('hello\n');
      socket.on('data', (c: Buffer) => chunks.push(c));
      socket.on('end', () => socket.end());
      socket.on('close', () => greeted.push(Buffer.concat(chunks).toString()));
    });
    authz = await unaryServer(
      PATHS,
      'envoy.service.auth.v2.CheckRequest',
      'envoy.service.auth.v2.CheckResponse',
      decide,
    );
    const h2 = { http2_protocol_options: {} };
    proxy = await startProxyProcess(
      {
        admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
        static_resources: {
          clusters: [
            cluster('echo', [upstream.port]),
            cluster('greeter', [greeter.port]),
            cluster('authz', [authz.port], h2),
            cluster('gone', [await closedPort()], h2),
          ],
          listeners: [
            listener('v3', {
              stat_prefix: 'v3',
              grpc_service: { envoy_grpc: { cluster_name: 'authz' }, timeout: TIMEOUT },
              transport_api_version: 'V3',
            }),
            {
              // The inspector reads the client's first bytes and puts them back: they wait too.
              ...listener(
                'inspected',
                {
                  stat_prefix: 'inspected',
                  grpc_service: { envoy_grpc: { cluster_name: 'authz' }, timeout: TIMEOUT },
                },
                {},
                'greeter',
              ),
              listener_filters: [{ name: 'envoy.filters.listener.tls_inspector' }],
            },
            listener('v2', {
              stat_prefix: 'v2',
              grpc_service: { envoy_grpc: { cluster_name: 'authz' }, timeout: TIMEOUT },
            }),
            listener(
              'greeting',
              {
                stat_prefix: 'greeting',
                grpc_service: { envoy_grpc: { cluster_name: 'authz' }, timeout: TIMEOUT },
              },
              {},
              'greeter',
            ),
            listener('closed', {
              stat_prefix: 'closed',
              grpc_service: { envoy_grpc: { cluster_name: 'gone' } },
            }),
            listener('open', {
              stat_prefix: 'open',
              grpc_service: { envoy_grpc: { cluster_name: 'gone' } },
              failure_mode_allow: true,
            }),
            listener(
              'mtls',
              {
                stat_prefix: 'mtls',
                grpc_service: { envoy_grpc: { cluster_name: 'authz' }, timeout: TIMEOUT },
                include_peer_certificate: true,
              },
              mtls,
            ),
          ],
        },
      },
      ['--concurrency', '2'],
    );
  });

  after(async () => {
    await proxy?.stop();
    await upstream?.close();
    await greeter?.close();
    authz?.close();
    pki?.remove();
  });

  const stat = async (name: string) => {
    const body = (await proxy.get('/stats')).body;
    return Number(new RegExp(`^${name.replaceAll('.', '\\.')}: (\\d+)$`, 'm').exec(body)?.[1] ?? -1);
  };

  it('relays what the authorizer allows and closes what it denies (v3 path), asking with both addresses', async () => {
    const port = await proxy.listenerPort('v3');
    const seen = authz.seen.length;
    assert.equal(await exchangeFrom(port, '127.0.0.2'), 'echo:hi');
    assert.equal(await exchangeFrom(port, '127.0.0.1'), '');
    const asked = authz.seen.slice(seen);
    assert.deepEqual(
      asked.map((s) => s.path),
      [PATHS[1], PATHS[1]],
    );
    const first = asked[0]?.request.attributes;
    assert.equal(first?.source?.address?.socket_address?.address, '127.0.0.2');
    assert.equal(first?.destination?.address?.socket_address?.port_value, port);
    for (const [name, value] of [
      ['total', 2],
      ['ok', 1],
      ['denied', 1],
      ['cx_closed', 1],
      ['error', 0],
      ['active', 0],
    ] as const)
      assert.equal(await settle(() => stat(`ext_authz.v3.${name}`), value, SETTLE_MS), value, name);
    assert.equal(
      await settle(() => stat('tcp.echo.downstream_cx_total'), 2, SETTLE_MS),
      2,
      'the TCP proxy takes each connection at open, as the reference; the bytes wait for the verdict',
    );
  });

  it('checks at the first bytes: a speak-first upstream is heard before, a silent client is never checked', async () => {
    const port = await proxy.listenerPort('greeting');
    const seen = authz.seen.length;
    const before = greeted.length;
    // A client that only listens: the greeting comes through, nothing is checked.
    const silent = net.connect({ port, host: '127.0.0.1' });
    const first = await new Promise<string>((resolve, reject) => {
      silent.once('data', (c: Buffer) => resolve(c.toString()));
      silent.once('error', reject);
      silent.setTimeout(15_000, () => reject(new Error('no greeting')));
    });
    assert.equal(first, 'hello\n');
    assert.equal(authz.seen.length, seen, 'nothing asked while the client says nothing');
    // A reset, not a FIN: a FIN ends the client's data and is checked, as the reference's onData.
    silent.resetAndDestroy();
    // A denied client (127.0.0.1) hears the greeting, speaks, and is closed: its bytes never went up.
    assert.equal(await greetedThenSay(port, '127.0.0.1'), 'hello\n');
    assert.equal(await settle(() => stat('ext_authz.greeting.denied'), 1, SETTLE_MS), 1);
    assert.equal(await stat('ext_authz.greeting.total'), 1, 'the silent client was never checked');
    assert.equal(authz.seen.length, seen + 1);
    assert.equal(await settle(() => greeted.length, before + 2, SETTLE_MS), before + 2);
    assert.deepEqual(greeted.slice(before), ['', ''], 'the upstream heard nothing from either');
    // An allowed client's bytes flow once the verdict came.
    assert.equal(await greetedThenSay(port, '127.0.0.2'), 'hello\n');
    assert.equal(await settle(() => greeted.length, before + 3, SETTLE_MS), before + 3);
    assert.equal(greeted[before + 2], 'hi');
  });

  it('holds bytes a listener filter read and put back, as those that come later', async () => {
    const port = await proxy.listenerPort('inspected');
    const before = greeted.length;
    await exchangeFrom(port, '127.0.0.1');
    assert.equal(await settle(() => stat('ext_authz.inspected.denied'), 1, SETTLE_MS), 1);
    assert.equal(await settle(() => greeted.length, before + 1, SETTLE_MS), before + 1);
    assert.equal(greeted[before], '', "the denied client's bytes never went upstream");
    await exchangeFrom(port, '127.0.0.2');
    assert.equal(await settle(() => greeted.length, before + 2, SETTLE_MS), before + 2);
    assert.equal(greeted[before + 1], 'hi', "the allowed client's bytes went on");
  });

  it('asks on the v2 path without transport_api_version', async () => {
    const port = await proxy.listenerPort('v2');
    const seen = authz.seen.length;
    assert.equal(await exchangeFrom(port, '127.0.0.2'), 'echo:hi');
    assert.equal(authz.seen[seen]?.path, PATHS[0]);
  });

  it('closes a connection the authorizer cannot be asked about, unless failure_mode_allow', async () => {
    assert.equal(await exchangeFrom(await proxy.listenerPort('closed'), '127.0.0.2'), '');
    assert.equal(await settle(() => stat('ext_authz.closed.error'), 1, SETTLE_MS), 1);
    assert.equal(await settle(() => stat('ext_authz.closed.cx_closed'), 1, SETTLE_MS), 1);
    assert.equal(await exchangeFrom(await proxy.listenerPort('open'), '127.0.0.2'), 'echo:hi');
    assert.equal(await settle(() => stat('ext_authz.open.error'), 1, SETTLE_MS), 1);
    assert.equal(await settle(() => stat('ext_authz.open.failure_mode_allowed'), 1, SETTLE_MS), 1);
  });

  it('refuses a missing stat_prefix or grpc_service and an unknown field, by path', () => {
    const report = new Report('t');
    networkExtAuthzFactory.compile({ unknown: true }, 'f', report);
    const paths = report.problems.map((p) => p.path);
    for (const path of ['f.grpc_service', 'f.unknown', 'f.stat_prefix'])
      assert.ok(paths.includes(path), path);
  });

  it('over mTLS asks with the peer principal and, with include_peer_certificate, its certificate', async () => {
    const port = await proxy.listenerPort('mtls');
    const seen = authz.seen.length;
    assert.equal(await exchangeTls(port, pki, clients.get('allowed') as Issued), 'echo:hi');
    assert.equal(await exchangeTls(port, pki, clients.get('other') as Issued), '');
    const source = authz.seen[seen]?.request.attributes?.source;
    assert.equal(source?.principal, 'spiffe://test/allowed');
    assert.equal(
      new X509Certificate(decodeURIComponent(source?.certificate ?? '')).fingerprint256,
      new X509Certificate((clients.get('allowed') as Issued).certPem).fingerprint256,
    );
    assert.equal(await settle(() => stat('ext_authz.mtls.denied'), 1, SETTLE_MS), 1);
  });
});
