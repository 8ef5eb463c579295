/**
 * TLS and mTLS to the management server, as Kuma's `system_ads` and Envoy Gateway's
 * `xds_cluster` set it up: the real go-control-plane server behind HAProxy terminating TLS
 * (it asks for a client certificate of the mesh CA and refuses a handshake without the SNI its
 * certificate names). Delta ADS with the trust bundle and SAN matcher in a static secret, state
 * of the world per type with the client certificate and trust bundle from files by SDS, both
 * deliver clusters; a server certificate of another CA, a SAN that does not match, and no
 * client certificate each fail the fetch at once, counted and logged by what failed. A REST
 * source polls over mTLS too.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../../events/index.js';
import { GoControlPlane, skipGoControlPlane } from '../../helpers/go-control-plane.js';
import { type Haproxy, hasHaproxy, NO_HAPROXY, startTlsTerminator } from '../../helpers/haproxy.js';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';
import { discoveryResponse } from '../../helpers/replace-file.js';
import {
  ADMIN,
  assignment,
  edsBootstrap,
  get,
  staticCluster,
  statValue,
  until,
  upstream,
} from '../../helpers/xds-fixtures.js';
import { XdsServer } from '../../helpers/xds-server.js';
import { makePki, type TestPki } from '../../tls/certs.js';

const ADS_V3 = { ads: {}, resource_api_version: 'V3' };
const TLS_TYPE = 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext';
const SECRET_TYPE = 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret';

/** The management cluster: the terminator's port, speaking HTTP/2, with `tls` as its TLS context. */
const xdsCluster = (port: number, tls: JsonObject): JsonObject => ({
  ...staticCluster('xds_cluster', [port], true),
  connect_timeout: '5s',
  transport_socket: { name: 'envoy.transport_sockets.tls', typed_config: { '@type': TLS_TYPE, ...tls } },
});

const deltaAds = {
  api_type: 'DELTA_GRPC',
  transport_api_version: 'V3',
  grpc_services: [{ envoy_grpc: { cluster_name: 'xds_cluster' } }],
};

/** A bootstrap discovering clusters from `cds` over the management cluster `xds`. */
const bootstrap = (xds: JsonObject, cds: JsonObject, extra: JsonObject = {}): JsonObject => ({
  node: { id: 'test-node', cluster: 'test' },
  admin: ADMIN,
  dynamic_resources: { ads_config: deltaAds, cds_config: { ...cds, initial_fetch_timeout: '60s' } },
  static_resources: { clusters: [xds], ...extra },
});

describe('TLS to the management server: go-control-plane behind HAProxy terminating mTLS', {
  skip: skipGoControlPlane || (hasHaproxy ? false : NO_HAPROXY),
  timeout: 180_000,
}, () => {
  let pki: TestPki;
  let server: GoControlPlane;
  let terminator: Haproxy;
  const proxies: ProxyProcess[] = [];
  const start = async (config: JsonObject, live = true) => {
    const proxy = await startProxyProcess(
      config,
      ['--concurrency', '1'],
      60_000,
      {},
      [],
      live ? 'live' : 'admin',
    );
    proxies.push(proxy);
    return proxy;
  };

  before(async () => {
    pki = makePki();
    server = await GoControlPlane.start(
      { node_id: 'test-node', version: '1', clusters: [staticCluster('web', [9])] },
      ['-any-node'],
    );
    const serverCert = pki.leaf('xds', ['DNS:xds.mesh']);
    terminator = await startTlsTerminator(server.port, { ...serverCert, clientCa: pki.ca.cert });
  });

  after(async () => {
    for (const proxy of proxies) await proxy.stop();
    terminator?.stop();
    await server?.stop();
    pki?.remove();
  });

  it("delta ADS with Kuma's shape: SNI, a static secret's trust bundle and SAN matcher, a client certificate", async () => {
    const client = pki.leaf('dataplane', ['URI:spiffe://mesh/dataplane']);
    const proxy = await start(
      bootstrap(
        xdsCluster(terminator.port, {
          sni: 'xds.mesh',
          common_tls_context: {
            tls_params: { tls_minimum_protocol_version: 'TLSv1_2' },
            tls_certificates: [
              { certificate_chain: { filename: client.cert }, private_key: { filename: client.key } },
            ],
            validation_context_sds_secret_config: { name: 'cp_validation_ctx' },
          },
        }),
        ADS_V3,
        {
          secrets: [
            {
              name: 'cp_validation_ctx',
              validation_context: {
                trusted_ca: { inline_bytes: Buffer.from(pki.ca.certPem).toString('base64') },
                match_typed_subject_alt_names: [{ san_type: 'DNS', matcher: { exact: 'xds.mesh' } }],
              },
            },
          ],
        },
      ),
    );
    await until('the discovered cluster', async () => (await proxy.get('/clusters')).body.includes('web::'));
    assert.equal(await statValue(proxy, 'control_plane.connected_state'), 1);
    assert.ok((await statValue(proxy, 'cluster.xds_cluster.ssl.handshake'))! >= 1);
    assert.ok(server.log.some((l) => l.event === 'delta_request' && l.error_detail !== true));
  });

  it("state of the world per type with Envoy Gateway's shape: certificate and trust bundle from files by SDS", async () => {
    const client = pki.leaf('gateway', ['DNS:gateway.mesh']);
    const dir = pki.dir;
    const certFile = join(dir, 'xds-certificate.json');
    const caFile = join(dir, 'xds-trusted-ca.json');
    writeFileSync(
      certFile,
      discoveryResponse('1', [
        {
          '@type': SECRET_TYPE,
          name: 'xds_certificate',
          tls_certificate: {
            certificate_chain: { filename: client.cert },
            private_key: { filename: client.key },
          },
        },
      ]),
    );
    writeFileSync(
      caFile,
      discoveryResponse('1', [
        {
          '@type': SECRET_TYPE,
          name: 'xds_trusted_ca',
          validation_context: { trusted_ca: { filename: pki.ca.cert } },
        },
      ]),
    );
    const fromFile = (path: string) => ({ path_config_source: { path }, resource_api_version: 'V3' });
    const sotw = {
      api_config_source: {
        api_type: 'GRPC',
        transport_api_version: 'V3',
        grpc_services: [{ envoy_grpc: { cluster_name: 'xds_cluster' } }],
      },
      resource_api_version: 'V3',
      initial_fetch_timeout: '60s',
    };
    const xds = xdsCluster(terminator.port, {
      sni: 'xds.mesh',
      common_tls_context: {
        tls_params: { tls_maximum_protocol_version: 'TLSv1_3' },
        tls_certificate_sds_secret_configs: [{ name: 'xds_certificate', sds_config: fromFile(certFile) }],
        validation_context_sds_secret_config: { name: 'xds_trusted_ca', sds_config: fromFile(caFile) },
      },
    });
    const proxy = await start({ ...bootstrap(xds, sotw), dynamic_resources: { cds_config: sotw } });
    await until('the discovered cluster', async () => (await proxy.get('/clusters')).body.includes('web::'));
    assert.ok(
      server.log.some(
        (l) =>
          l.event === 'stream_open' &&
          l.protocol === 'sotw' &&
          String(l.method).includes('ClusterDiscoveryService'),
      ),
    );
    assert.ok((await statValue(proxy, 'cluster.xds_cluster.ssl.handshake'))! >= 1);
  });

  /** A proxy whose handshakes with the terminator fail for `tls`'s reason: it stays initializing. */
  const refused = async (tls: JsonObject) => {
    const proxy = await start(bootstrap(xdsCluster(terminator.port, tls), ADS_V3), false);
    await until(
      'a failed fetch',
      async () => ((await statValue(proxy, 'cluster_manager.cds.update_failure')) ?? 0) >= 1,
      30_000,
    );
    assert.equal(await statValue(proxy, 'control_plane.connected_state'), 0);
    assert.equal((await proxy.get('/ready')).status, 503);
    return proxy;
  };

  const clientCert = () => {
    const client = pki.leaf(`client-${Math.random().toString(36).slice(2, 8)}`, ['DNS:client.mesh']);
    return [{ certificate_chain: { filename: client.cert }, private_key: { filename: client.key } }];
  };

  it('a server certificate of another CA is refused (fail_verify_error), before a byte of the stream', async () => {
    const other = pki.otherCa('other-ca');
    const opened = server.log.filter((l) => l.event === 'stream_open').length;
    const proxy = await refused({
      sni: 'xds.mesh',
      common_tls_context: {
        tls_certificates: clientCert(),
        validation_context: { trusted_ca: { filename: other.cert } },
      },
    });
    assert.ok((await statValue(proxy, 'cluster.xds_cluster.ssl.fail_verify_error'))! >= 1);
    await until('the refusal in the log', async () =>
      /certificate was refused \(fail_verify_error: UNABLE_TO_VERIFY_LEAF_SIGNATURE\)/.test(proxy.stderr()),
    );
    assert.equal(server.log.filter((l) => l.event === 'stream_open').length, opened);
  });

  it('a server certificate whose SAN does not match is refused (fail_verify_san)', async () => {
    const proxy = await refused({
      sni: 'xds.mesh',
      common_tls_context: {
        tls_certificates: clientCert(),
        validation_context: {
          trusted_ca: { filename: pki.ca.cert },
          match_typed_subject_alt_names: [{ san_type: 'DNS', matcher: { exact: 'other.mesh' } }],
        },
      },
    });
    assert.ok((await statValue(proxy, 'cluster.xds_cluster.ssl.fail_verify_san'))! >= 1);
  });

  it('without a client certificate, or without the SNI, the management server refuses the handshake', async () => {
    const refusals: JsonObject[] = [
      {
        sni: 'xds.mesh',
        common_tls_context: { validation_context: { trusted_ca: { filename: pki.ca.cert } } },
      },
      { common_tls_context: { tls_certificates: clientCert() } },
    ];
    for (const tls of refusals) {
      const proxy = await refused(tls);
      await until('the failed handshake in the log', async () => /TLS handshake failed/.test(proxy.stderr()));
      assert.ok((await statValue(proxy, 'cluster.xds_cluster.ssl.connection_error'))! >= 1);
    }
  });

  it('a REST source polls over mTLS, its peer checked the same way', async () => {
    const xds = await XdsServer.start();
    const restPort = await xds.startRest();
    const rest = await startTlsTerminator(restPort, {
      ...pki.leaf('rest', ['DNS:rest.mesh']),
      clientCa: pki.ca.cert,
      alpn: 'http/1.1',
    });
    const a = await upstream('a');
    try {
      xds.set('eds', [assignment('some_service', [a.port])], 'v1');
      const config = edsBootstrap(xds.port, {
        api_config_source: {
          api_type: 'REST',
          cluster_names: ['rest_cluster'],
          refresh_delay: '0.100s',
          request_timeout: '2s',
        },
      });
      const client = pki.leaf('rest-client', ['DNS:client.mesh']);
      (config.static_resources as { clusters: unknown[] }).clusters.push({
        ...staticCluster('rest_cluster', [rest.port]),
        transport_socket: {
          name: 'envoy.transport_sockets.tls',
          typed_config: {
            '@type': TLS_TYPE,
            sni: 'rest.mesh',
            common_tls_context: {
              tls_certificates: [
                { certificate_chain: { filename: client.cert }, private_key: { filename: client.key } },
              ],
              validation_context: {
                trusted_ca: { filename: pki.ca.cert },
                match_typed_subject_alt_names: [{ san_type: 'DNS', matcher: { exact: 'rest.mesh' } }],
              },
            },
          },
        },
      });
      const proxy = await start(config);
      assert.equal((await get(await proxy.listenerPort('listener_0'))).body, 'a');
      const ack = await xds.ack('eds', 'v1');
      assert.equal(ack.method, 'REST /v2/discovery:endpoints');
      const handshakes = (await statValue(proxy, 'cluster.rest_cluster.ssl.handshake')) ?? 0;
      assert.ok(handshakes >= 1);
      // Polls every 0.1 s reuse their connection: far fewer handshakes than polls.
      await new Promise((r) => setTimeout(r, 1500));
      assert.ok(((await statValue(proxy, 'cluster.rest_cluster.ssl.handshake')) ?? 0) < handshakes + 5);
    } finally {
      rest.stop();
      await xds.stop();
      await a.close();
    }
  });
});
