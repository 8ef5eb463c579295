/**
 * Discovered clusters wait for their SDS secrets (issue 30 item 1, the init manager). Root
 * cause: only bootstrap clusters and listeners held initialisation for the secrets they name;
 * one discovered by CDS or LDS after the server was LIVE was applied at once, so a new cluster
 * served with no certificate (every handshake refused) and a changed one dropped its working
 * TLS context for one whose secret had not come. Now it waits (the old one serving on) until
 * each secret it names arrived, or its SDS source's `initial_fetch_timeout` passed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../../events/index.js';
import { rdsNamesOf } from '../../../src/config/rds-names.js';
import { certificateSecret } from '../../helpers/sds-secrets.js';
import {
  cluster,
  startXdsClient,
  validResource,
  type XdsClientHarness,
  xdsBootstrap,
} from '../../helpers/xds-client.js';
import { until } from '../../helpers/xds-fixtures.js';
import { XdsServer } from '../../helpers/xds-server.js';
import { type Issued, makePki, type TestPki } from '../../tls/certs.js';

/** A cluster whose client certificate is the SDS secret `secret` (over ADS, v3). */
const tlsCluster = (name: string, secret: string, timeout = '15s'): JsonObject =>
  cluster(name, {
    transport_socket: {
      name: 'envoy.transport_sockets.tls',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext',
        common_tls_context: {
          tls_certificate_sds_secret_configs: [
            {
              name: secret,
              sds_config: { ads: {}, resource_api_version: 'V3', initial_fetch_timeout: timeout },
            },
          ],
        },
      },
    },
  });

/** The name of the secret a cluster's TLS context names, as the state holds it ('' when none). */
function secretNamed(h: XdsClientHarness, name: string): string {
  const config = h.ctx.store.state.clusters[name]?.config as
    | {
        transport_socket?: {
          typed_config?: {
            common_tls_context?: { tls_certificate_sds_secret_configs?: Array<{ name: string }> };
          };
        };
      }
    | undefined;
  return (
    config?.transport_socket?.typed_config?.common_tls_context?.tls_certificate_sds_secret_configs?.[0]
      ?.name ?? ''
  );
}

describe('a cluster discovered after start waits for its SDS secrets', () => {
  let pki: TestPki;
  let cert: Issued;
  let xds: XdsServer;
  let h: XdsClientHarness;

  before(async () => {
    pki = makePki();
    cert = pki.leaf('client', ['DNS:client.mesh']);
    xds = await XdsServer.start();
    xds.wireVersion = 'V3';
    xds.set('cds', [cluster('web')], 'c1');
    h = await startXdsClient(xdsBootstrap({ grpc: xds.port }, 'cds'));
    await h.client.initialized;
    await xds.ack('cds', 'c1');
  });
  after(async () => {
    await h?.close();
    await xds?.stop();
    pki?.remove();
  });

  it('is not applied until its secret arrives; the secret is subscribed meanwhile', async () => {
    xds.set('cds', [cluster('web'), tlsCluster('tls', 'cert-a')], 'c2');
    await xds.ack('cds', 'c2');
    await xds.waitFor((r) => r.type_url.endsWith('Secret') && r.resource_names.includes('cert-a'));
    assert.equal(h.ctx.store.state.clusters.tls, undefined, 'waiting, not applied');
    xds.set('sds', [certificateSecret('cert-a', cert)], 's1');
    await until('tls applied', async () => h.ctx.store.state.clusters.tls !== undefined);
    const applied = h.ctx.store.state.clusters as Record<string, { versionInfo: string } | undefined>;
    assert.equal(applied.tls?.versionInfo, 'c2', 'at the version it came with');
    assert.equal(secretNamed(h, 'tls'), 'cert-a');
  });

  it('a changed cluster serves as it was until the secret its new config names arrives', async () => {
    xds.set('cds', [cluster('web'), tlsCluster('tls', 'cert-b')], 'c3');
    await xds.ack('cds', 'c3');
    await xds.waitFor((r) => r.type_url.endsWith('Secret') && r.resource_names.includes('cert-b'));
    assert.equal(secretNamed(h, 'tls'), 'cert-a', 'the old config serves on');
    xds.set('sds', [certificateSecret('cert-a', cert), certificateSecret('cert-b', cert)], 's2');
    await until('tls updated', async () => secretNamed(h, 'tls') === 'cert-b');
  });

  it('one left out of the next response is never applied; after initial_fetch_timeout one is applied as it is', async () => {
    xds.set('cds', [cluster('web'), tlsCluster('tls', 'cert-b'), tlsCluster('gone', 'never')], 'c4');
    await xds.ack('cds', 'c4');
    xds.set('cds', [cluster('web'), tlsCluster('tls', 'cert-b'), tlsCluster('late', 'never', '0.3s')], 'c5');
    await xds.ack('cds', 'c5');
    await until('late applied after its timeout', async () => h.ctx.store.state.clusters.late !== undefined);
    assert.equal(h.ctx.store.state.clusters.gone, undefined, 'dropped with the response that left it out');
    xds.set(
      'sds',
      [
        certificateSecret('cert-a', cert),
        certificateSecret('cert-b', cert),
        certificateSecret('never', cert),
      ],
      's3',
    );
    await xds.ack('sds', 's3');
    assert.equal(h.ctx.store.state.clusters.gone, undefined);
  });
});

describe('a listener discovered after start waits for its SDS secrets', () => {
  it('binds once the certificate of its TLS filter chain arrived', async () => {
    const pki = makePki();
    const xds = await XdsServer.start();
    xds.wireVersion = 'V3';
    xds.set('lds', [validResource('lds', 'web')], 'l1');
    const h = await startXdsClient(xdsBootstrap({ grpc: xds.port }, 'lds'));
    try {
      await h.client.initialized;
      const plain = validResource('lds', 'secure');
      const chain = (plain.filter_chains as JsonObject[])[0]!;
      const secure = {
        ...plain,
        filter_chains: [
          {
            ...chain,
            transport_socket: {
              name: 'envoy.transport_sockets.tls',
              typed_config: {
                '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext',
                common_tls_context: {
                  tls_certificate_sds_secret_configs: [
                    { name: 'server-cert', sds_config: { ads: {}, resource_api_version: 'V3' } },
                  ],
                },
              },
            },
          },
        ],
      };
      xds.set('lds', [validResource('lds', 'web'), secure], 'l2');
      await xds.ack('lds', 'l2');
      await xds.waitFor((r) => r.type_url.endsWith('Secret') && r.resource_names.includes('server-cert'));
      assert.equal(h.ctx.store.state.listeners.secure, undefined, 'waiting, not bound');
      xds.set('sds', [certificateSecret('server-cert', pki.leaf('server', ['DNS:secure.mesh']))], 's1');
      await until('secure added', async () => h.ctx.store.state.listeners.secure !== undefined);
    } finally {
      await h.close();
      await xds.stop();
      pki.remove();
    }
  });
});

/** Listener `name` whose HTTP connection manager takes route table `table` from RDS over ADS. */
const rdsListener = (name: string, table: string, timeout: string): JsonObject =>
  validResource('lds', name, {
    filter_chains: [
      {
        filters: [
          {
            name: 'envoy.filters.network.http_connection_manager',
            typed_config: {
              '@type':
                'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
              stat_prefix: name,
              rds: {
                config_source: { ads: {}, resource_api_version: 'V3', initial_fetch_timeout: timeout },
                route_config_name: table,
              },
              http_filters: [
                {
                  name: 'envoy.filters.http.router',
                  typed_config: {
                    '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router',
                  },
                },
              ],
            },
          },
        ],
      },
    ],
  });

describe('a changed listener waits for the route table it names', () => {
  // Root cause: a changed listener was applied at once, before the table it names had come by
  // RDS (subscribed only then), so every request of that round trip was answered 404.
  it('serves as it was until the table arrives; after initial_fetch_timeout it is applied as it is', async () => {
    const xds = await XdsServer.start();
    xds.wireVersion = 'V3';
    xds.set('lds', [rdsListener('web', 'table-a', '15s')], 'l1');
    xds.set('rds', [validResource('rds', 'table-a')], 'r1');
    const h = await startXdsClient(xdsBootstrap({ grpc: xds.port }, 'lds'));
    const tables = () => rdsNamesOf(h.ctx.store.state.listeners.web?.config ?? {}).map((t) => t.name);
    try {
      await h.client.initialized;
      assert.deepEqual(tables(), ['table-a']);
      xds.set('lds', [rdsListener('web', 'table-b', '15s')], 'l2');
      await xds.ack('lds', 'l2');
      await xds.waitFor(
        (r) => r.type_url.endsWith('RouteConfiguration') && r.resource_names.includes('table-b'),
      );
      assert.deepEqual(tables(), ['table-a'], 'the old listener serves on');
      xds.set('rds', [validResource('rds', 'table-a'), validResource('rds', 'table-b')], 'r2');
      await until('web changed', async () => tables()[0] === 'table-b');
      xds.set('lds', [rdsListener('web', 'never', '0.3s')], 'l3');
      await xds.ack('lds', 'l3');
      await until('applied after its timeout', async () => tables()[0] === 'never');
    } finally {
      await h.close();
      await xds.stop();
    }
  });
});
