/**
 * Secrets from SDS, mesh style: a management server of the test's own pushes, over ADS (v3),
 * a cluster whose mTLS client certificate and trust bundle are SDS secrets; traffic flows to a
 * TLS upstream that requires a client certificate signed by the mesh CA; the certificate
 * rotates under load with no failed request, new upstream handshakes present the new one,
 * and `/certs` shows its serial. The key material shows in no admin answer and no log line.
 */
import assert from 'node:assert/strict';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as tls from 'node:tls';
import type { JsonObject } from '../../../events/index.js';
import { kindOfTypeUrl } from '../../../src/edges/xds/types.js';
import { GoControlPlane, type Snapshot, skipGoControlPlane } from '../../helpers/go-control-plane.js';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';
import { discoveryResponse, replaceFile } from '../../helpers/replace-file.js';
import {
  certificateSecret,
  certSerials,
  meshCluster,
  serialOf,
  trustSecret,
} from '../../helpers/sds-secrets.js';
import { type SteadyLoad, steadyLoad } from '../../helpers/steady-load.js';
import {
  ADMIN,
  cdsOverAds,
  get,
  httpListener,
  staticCluster,
  statValue,
  until,
} from '../../helpers/xds-fixtures.js';
import { XdsServer } from '../../helpers/xds-server.js';
import { type Issued, makePki, type TestPki } from '../../tls/certs.js';

const SPIFFE_FRONT = 'URI:spiffe://mesh/ns/default/sa/front';

/** A TLS upstream asking every client for a certificate signed by the mesh CA; it records their serials. */
async function mtlsUpstream(pki: TestPki, server: Issued) {
  const serials: string[] = [];
  let answered = 0;
  const srv = https.createServer(
    {
      cert: server.certPem,
      key: server.keyPem,
      ca: pki.ca.certPem,
      requestCert: true,
      rejectUnauthorized: true,
    },
    (_req, res) => {
      // Every 10th answer closes its connection: the proxy opens new ones under load.
      answered += 1;
      if (answered % 10 === 0) res.setHeader('connection', 'close');
      res.end('ok');
    },
  );
  srv.on('secureConnection', (socket: tls.TLSSocket) => {
    const serial = socket.getPeerX509Certificate()?.serialNumber.toLowerCase();
    if (serial) serials.push(serial);
  });
  srv.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return {
    port: (srv.address() as AddressInfo).port,
    serials,
    close: () =>
      new Promise<void>((resolve) => {
        srv.closeAllConnections();
        srv.close(() => resolve());
      }),
  };
}

type Backend = Awaited<ReturnType<typeof mtlsUpstream>>;

/** A mesh's CA, a workload certificate (`first`), the one it rotates to (`second`) and an mTLS upstream. */
async function meshPki(names: [string, string], san: string) {
  const pki = makePki();
  return {
    pki,
    first: pki.leaf(names[0], [san]),
    second: pki.leaf(names[1], [san]),
    backend: await mtlsUpstream(pki, pki.leaf('backend', ['DNS:backend.mesh'])),
  };
}

/**
 * Starts steady load on `port`, rotates to `next` once traffic flows, and waits until `/certs`
 * shows it and the upstream saw a new handshake presenting it; the load runs on.
 */
async function rotateUnderLoad(
  proxy: ProxyProcess,
  port: number,
  backend: Backend,
  next: Issued,
  rotate: () => Promise<unknown>,
  load: { clients: number; probeEveryMs: number; maxRequests: number; warm: number },
): Promise<SteadyLoad> {
  const running = steadyLoad(port, {
    h1Clients: load.clients,
    h2Clients: 0,
    probeEveryMs: load.probeEveryMs,
    maxRequests: load.maxRequests,
    body: 'ok',
  });
  await until('traffic', async () => running.ok > load.warm, 20_000);
  const seenBefore = backend.serials.length;
  await rotate();
  await until(
    '/certs to show the new serial',
    async () => (await certSerials(proxy)).includes(serialOf(next)),
    20_000,
  );
  await until(
    'a new upstream handshake with the new certificate',
    async () => backend.serials.slice(seenBefore).includes(serialOf(next)),
    20_000,
  );
  return running;
}

/** The mesh's trust bundle: its CA, for the upstream's name. */
const meshTrust = (pki: TestPki) =>
  trustSecret('mesh-trust', [pki.ca], { match_subject_alt_names: [{ exact: 'backend.mesh' }] });

describe('SDS on ADS (v3): a mesh cluster with mTLS from secrets', () => {
  let pki: TestPki;
  let xds: XdsServer;
  let proxy: ProxyProcess;
  let backend: Backend;
  let port: number;
  let first: Issued;
  let second: Issued;

  before(async () => {
    ({ pki, first, second, backend } = await meshPki(['workload-1', 'workload-2'], SPIFFE_FRONT));
    xds = await XdsServer.start();
    xds.set('cds', [meshCluster(backend.port, true)], 'c1');
    xds.set('sds', [certificateSecret('workload-cert', first), meshTrust(pki)], 's1');
    proxy = await startProxyProcess(cdsOverAds(xds.port, [httpListener('in', 'backend')]), [
      '--concurrency',
      '2',
    ]);
    port = await proxy.listenerPort('in');
  });

  after(async () => {
    await proxy?.stop();
    await xds?.stop();
    await backend?.close();
    pki?.remove();
  });

  it('subscribes to both secrets on the ADS stream (v3 type URL) and serves mTLS with them', async () => {
    const ack = await xds.ack('sds', 's1');
    assert.equal(ack.type_url, 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret');
    assert.deepEqual(ack.resource_names, ['mesh-trust', 'workload-cert']);
    assert.equal(ack.stream, (await xds.ack('cds', 'c1')).stream, 'one ADS stream');
    const res = await get(port);
    assert.equal(res.status, 200);
    assert.equal(res.body, 'ok');
    assert.ok(backend.serials.includes(serialOf(first)), 'the upstream saw the SDS client certificate');
    assert.deepEqual((await certSerials(proxy)).sort(), [serialOf(first), serialOf(pki.ca)].sort());
    assert.equal(await statValue(proxy, 'sds.workload-cert.update_success'), 1);
  });

  it('/config_dump lists the discovered secrets with versions, the private key redacted', async () => {
    const body = (await proxy.get('/config_dump')).body;
    assert.ok(!body.includes(first.keyPem.split('\n')[1]!), 'no key material');
    const dump = JSON.parse(body) as { configs: Array<Record<string, unknown>> };
    const secrets = dump.configs.find((c) => String(c['@type']).endsWith('SecretsConfigDump')) as {
      dynamic_active_secrets: Array<{
        name: string;
        version_info: string;
        last_updated: string;
        secret: { tls_certificate?: { private_key: { inline_string: string } } };
      }>;
    };
    assert.deepEqual(
      secrets.dynamic_active_secrets.map((s) => [s.name, s.version_info]),
      [
        ['mesh-trust', 's1'],
        ['workload-cert', 's1'],
      ],
    );
    assert.equal(
      secrets.dynamic_active_secrets[1]!.secret.tls_certificate?.private_key.inline_string,
      '[redacted]',
    );
    const events = (await proxy.get('/events')).body;
    const set = (
      JSON.parse(events) as {
        events: Array<{
          event: {
            type: string;
            secret?: { name: string; tls_certificate?: { private_key: { inline_string: string } } };
          };
        }>;
      }
    ).events
      .map((e) => e.event)
      .filter((e) => e.type === 'secret/set' && e.secret?.name === 'workload-cert');
    assert.equal(set.length, 1, 'the secret arriving is one event');
    assert.equal(set[0]!.secret?.tls_certificate?.private_key.inline_string, '[redacted]');
    assert.ok(!events.includes(first.keyPem.split('\n')[1]!), '/events shows no key material');
  });

  it('rotates the certificate under load: no failed request, new handshakes present the new one, /certs shows its serial', async () => {
    const rotate = () => {
      xds.set('sds', [certificateSecret('workload-cert', second), meshTrust(pki)], 's2');
      return xds.ack('sds', 's2');
    };
    const load = await rotateUnderLoad(proxy, port, backend, second, rotate, {
      clients: 4,
      probeEveryMs: 50,
      maxRequests: 20_000,
      warm: 50,
    });
    const okAtRotation = load.ok;
    await until('more traffic after the rotation', async () => load.ok > okAtRotation + 50, 20_000);
    const result = await load.stop();
    if (result.failed.length > 0)
      console.log((await proxy.get('/stats?filter=ssl|secrets|sds|upstream_cx_connect')).body);
    assert.deepEqual(result.failed, [], 'no request failed across the rotation');
    assert.equal(result.refused, 0);
    assert.ok(
      !(await certSerials(proxy)).includes(serialOf(first)),
      'the old certificate is gone from /certs',
    );
    assert.equal(await statValue(proxy, 'sds.workload-cert.update_success'), 2);
    assert.ok(!proxy.stderr().includes(second.keyPem.split('\n')[1]!), 'no key material in the log');
  });

  it('NACKs a secret whose key does not belong to its certificate, and keeps serving the last good one', async () => {
    const from = xds.requests.length;
    xds.set(
      'sds',
      [certificateSecret('workload-cert', { ...second, keyPem: first.keyPem }), meshTrust(pki)],
      's3',
    );
    const nack = await xds.nack('sds', 10_000, from);
    assert.equal(nack.version_info, 's2');
    assert.match(nack.error_detail?.message ?? '', /Secret 'workload-cert'.*TLS context refused by OpenSSL/);
    assert.equal((await get(port)).body, 'ok');
    assert.ok((await certSerials(proxy)).includes(serialOf(second)));
  });
});

/** The serial each client connection's server presented in its handshake. */
const presented = new WeakMap<tls.TLSSocket, string>();

/** An HTTPS GET over `agent`, with the serial of the certificate the server presented. */
function httpsGet(
  port: number,
  ca: string,
  agent: https.Agent,
): Promise<{ body: string; serial: string; reused: boolean; connection: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      { host: '127.0.0.1', port, path: '/', ca, agent, servername: 'front.mesh' },
      (res) => {
        const serial = (socket && presented.get(socket)) ?? '';
        const reused = req.reusedSocket;
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          body += d;
        });
        res.on('end', () => resolve({ body, serial, reused, connection: String(res.headers.connection) }));
      },
    );
    let socket: tls.TLSSocket | undefined;
    req.on('socket', (s) => {
      const secure = s as tls.TLSSocket;
      socket = secure;
      const seen = () =>
        presented.set(secure, secure.getPeerX509Certificate()?.serialNumber.toLowerCase() ?? '');
      if (!presented.has(secure)) secure.once('secureConnect', seen);
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('timed out')));
  });
}

/** A DiscoveryResponse file of one secret, replaced atomically as a path source must be. */
function writeSecretFile(file: string, version: string, secret: object): void {
  replaceFile(
    file,
    discoveryResponse(version, [{ '@type': 'type.googleapis.com/envoy.api.v2.auth.Secret', ...secret }]),
  );
}

describe('SDS from a file (listener certificate) and a v2 SDS service (cluster trust bundle)', () => {
  let pki: TestPki;
  let xds: XdsServer;
  let proxy: ProxyProcess | undefined;
  let backend: Backend;
  let file: string;
  let first: Issued;
  let second: Issued;

  before(async () => {
    ({ pki, first, second, backend } = await meshPki(['front-1', 'front-2'], 'DNS:front.mesh'));
    xds = await XdsServer.start();
    file = join(pki.dir, 'front-cert.json');
    writeSecretFile(file, 'f1', certificateSecret('front-cert', first));
  });

  after(async () => {
    await proxy?.stop();
    await xds?.stop();
    await backend?.close();
    pki?.remove();
  });

  it('holds initialisation until the SDS service sends the trust bundle, then serves', async () => {
    const grpcV2 = {
      api_config_source: {
        api_type: 'GRPC',
        grpc_services: [{ envoy_grpc: { cluster_name: 'xds_cluster' } }],
      },
      initial_fetch_timeout: '60s',
    };
    const listener = httpListener('front', 'backend') as { filter_chains: JsonObject[] };
    listener.filter_chains[0]!.tls_context = {
      common_tls_context: {
        tls_certificate_sds_secret_configs: [{ name: 'front-cert', sds_config: { path: file } }],
      },
    };
    const cluster = {
      ...staticCluster('backend', [backend.port]),
      connect_timeout: '5s',
      tls_context: {
        sni: 'backend.mesh',
        common_tls_context: {
          tls_certificates: [
            { certificate_chain: { filename: first.cert }, private_key: { filename: first.key } },
          ],
          validation_context_sds_secret_config: { name: 'mesh-trust', sds_config: grpcV2 },
        },
      },
    };
    const starting = startProxyProcess(
      {
        admin: ADMIN,
        static_resources: {
          listeners: [listener],
          clusters: [cluster, staticCluster('xds_cluster', [xds.port], true)],
        },
      },
      ['--concurrency', '1'],
      60_000,
    );
    let live = false;
    void starting.then(() => {
      live = true;
    });
    const subscribed = await xds.waitFor((r) => kindOfTypeUrl(r.type_url) === 'sds', 20_000);
    assert.equal(subscribed.method, '/envoy.service.discovery.v2.SecretDiscoveryService/StreamSecrets');
    assert.equal(subscribed.type_url, 'type.googleapis.com/envoy.api.v2.auth.Secret');
    assert.deepEqual(subscribed.resource_names, ['mesh-trust']);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(live, false, 'not LIVE while the secret is missing');
    xds.set('sds', [meshTrust(pki)], 't1');
    proxy = await starting;
    const port = await proxy.listenerPort('front');
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
    const res = await httpsGet(port, pki.ca.certPem, agent);
    assert.equal(res.body, 'ok', 'through the listener and the mTLS cluster');
    assert.equal(res.serial, serialOf(first));
    agent.destroy();
  });

  it('rotates the listener certificate when its file changes: new handshakes get it, an open connection carries on', async () => {
    assert.ok(proxy);
    const port = await proxy.listenerPort('front');
    const kept = new https.Agent({ keepAlive: true, maxSockets: 1 });
    assert.equal((await httpsGet(port, pki.ca.certPem, kept)).serial, serialOf(first));
    writeSecretFile(file, 'f2', certificateSecret('front-cert', second));
    await until(
      '/certs to show the new serial',
      async () => (await certSerials(proxy!)).includes(serialOf(second)),
      20_000,
    );
    const fresh = new https.Agent({ keepAlive: false });
    await until(
      'a new handshake with the new certificate',
      async () => (await httpsGet(port, pki.ca.certPem, fresh)).serial === serialOf(second),
      20_000,
    );
    const again = await httpsGet(port, pki.ca.certPem, kept);
    assert.equal(again.body, 'ok', 'the connection opened before the rotation still serves');
    assert.equal(again.reused, true);
    assert.equal(again.serial, serialOf(first), 'on its old certificate');
    kept.destroy();
    fresh.destroy();
  });
});

for (const apiType of ['GRPC', 'DELTA_GRPC'] as const)
  describe(`SDS rotation from the real go-control-plane (v3 ADS, ${apiType})`, {
    skip: skipGoControlPlane,
  }, () => {
    let pki: TestPki;
    let cp: GoControlPlane;
    let proxy: ProxyProcess;
    let backend: Backend;
    let first: Issued;
    let second: Issued;
    const snapshot = (version: string, cert: Issued): Snapshot => ({
      node_id: 'mesh-node',
      version,
      clusters: [meshCluster(backend.port)],
      secrets: [certificateSecret('workload-cert', cert), trustSecret('mesh-trust', [pki.ca])],
    });

    /** The secrets of snapshot `version` ACKed: a state-of-the-world ACK of it, or a delta one of their response. */
    const secretsAcked = async (version: string) => {
      if (apiType === 'GRPC') return cp.ack('tls.v3.Secret', version);
      return cp.deltaAck(
        `secrets of version ${version}`,
        (l) => String(l.type_url).endsWith('Secret') && l.system_version_info === version,
        0,
        15_000,
      );
    };

    before(async () => {
      ({ pki, first, second, backend } = await meshPki(['gcp-1', 'gcp-2'], SPIFFE_FRONT));
      cp = await GoControlPlane.start(snapshot('1', first));
      proxy = await startProxyProcess(
        cdsOverAds(cp.port, [httpListener('in', 'backend')], {
          apiType,
          node: { id: 'mesh-node', cluster: 'mesh' },
        }),
        ['--concurrency', '2'],
      );
    });

    after(async () => {
      await proxy?.stop();
      await cp?.stop();
      await backend?.close();
      pki?.remove();
    });

    it('serves mTLS with the secrets it pushes and rotates the certificate with no failed request', async () => {
      await secretsAcked('1');
      const port = await proxy.listenerPort('in');
      assert.equal((await get(port)).body, 'ok');
      assert.ok((await certSerials(proxy)).includes(serialOf(first)));
      const rotate = () => {
        cp.set(snapshot('2', second));
        return secretsAcked('2');
      };
      const load = await rotateUnderLoad(proxy, port, backend, second, rotate, {
        clients: 2,
        probeEveryMs: 100,
        maxRequests: 10_000,
        warm: 20,
      });
      const result = await load.stop();
      assert.deepEqual(result.failed, []);
      assert.equal(result.refused, 0);
    });
  });
