/**
 * Upstream mTLS as a mesh sets it up, against nginx requiring a client certificate
 * (`ssl_verify_client on`): the cluster comes by CDS and its client certificate and trust
 * bundle by SDS, both from the real go-control-plane server over delta ADS, at --concurrency 2.
 * Under load the control plane rotates the client certificate, then widens the trust bundle
 * to a second root, moves the upstream to a certificate of that root and drops the first: no
 * request fails, and nginx's log shows new connections presenting the new certificate (its
 * serial).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  GoControlPlane,
  type LogLine,
  type Snapshot,
  skipGoControlPlane,
} from '../helpers/go-control-plane.js';
import { hasNginx, type Nginx, NO_NGINX, startNginx } from '../helpers/nginx.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';
import { certificateSecret, meshCluster, serialOf, trustSecret } from '../helpers/sds-secrets.js';
import { steadyLoad } from '../helpers/steady-load.js';
import { cdsOverAds, httpListener, until } from '../helpers/xds-fixtures.js';
import { type Issued, makePki, type TestPki } from '../tls/certs.js';

/**
 * nginx asking every client for a certificate of `clientCa`, logging each request's client
 * serial; a connection serves 25 requests, so the proxy keeps opening new ones under load.
 */
function mtlsNginx(server: Issued, clientCa: string, accessLog: string): Promise<Nginx> {
  return startNginx(
    `ssl_certificate ${server.cert};
    ssl_certificate_key ${server.key};
    ssl_client_certificate ${clientCa};
    ssl_verify_client on;
    keepalive_requests 25;
    location / { return 200 'ok'; }`,
    'ssl',
    `log_format serial '$ssl_client_serial';
  access_log ${accessLog} serial;`,
  );
}

describe('upstream mTLS to nginx (ssl_verify_client) with SDS from go-control-plane, rotated under load', {
  skip: skipGoControlPlane || (hasNginx ? false : NO_NGINX),
  timeout: 240_000,
}, () => {
  let pki: TestPki;
  let newCa: Issued;
  let first: Issued;
  let second: Issued;
  let nginx: Nginx;
  /** The same upstream with a certificate of the second root. */
  let nginx2: Nginx;
  let accessLog2: string;
  let accessLog: string;
  let cp: GoControlPlane;
  let proxy: ProxyProcess;
  let version = 1;

  const snapshot = (cert: Issued, bundle: Issued[], upstream = nginx.port): Snapshot => ({
    node_id: 'sidecar',
    version: String(version),
    clusters: [meshCluster(upstream)],
    secrets: [
      certificateSecret('workload-cert', cert),
      trustSecret('mesh-trust', bundle, { match_subject_alt_names: [{ exact: 'backend.mesh' }] }),
    ],
  });

  /** The ACK (never a NACK) of the secrets of the current version. */
  const secretsAcked = (from: number): Promise<LogLine> =>
    cp.deltaAck(
      'secrets',
      (l) => String(l.type_url).endsWith('Secret') && l.system_version_info === String(version),
      from,
    );

  /** The client serials nginx logged, one a request, lowercase. */
  const loggedSerials = (file = accessLog) =>
    existsSync(file)
      ? readFileSync(file, 'utf8')
          .split('\n')
          .filter((l) => l !== '')
          .map((l) => l.toLowerCase())
      : [];

  before(async () => {
    pki = makePki();
    newCa = pki.otherCa('mesh-root-2');
    first = pki.leaf('workload-1', ['URI:spiffe://mesh/ns/default/sa/front']);
    second = pki.leaf('workload-2', ['URI:spiffe://mesh/ns/default/sa/front']);
    const server = pki.leaf('backend', ['DNS:backend.mesh']);
    accessLog = join(pki.dir, 'access.log');
    const clientCa = join(pki.dir, 'client-ca.pem');
    writeFileSync(clientCa, pki.ca.certPem);
    nginx = await mtlsNginx(server, clientCa, accessLog);
    accessLog2 = join(pki.dir, 'access2.log');
    nginx2 = await mtlsNginx(pki.leaf('backend-2', ['DNS:backend.mesh'], newCa), clientCa, accessLog2);
    cp = await GoControlPlane.start(snapshot(first, [pki.ca]));
    proxy = await startProxyProcess(
      cdsOverAds(cp.port, [httpListener('outbound', 'backend')], {
        apiType: 'DELTA_GRPC',
        node: { id: 'sidecar', cluster: 'mesh' },
      }),
      ['--concurrency', '2'],
    );
  });

  after(async () => {
    await proxy?.stop();
    await cp?.stop();
    nginx?.stop();
    nginx2?.stop();
    pki?.remove();
  });

  it('presents the pushed certificate, then the rotated one; follows a root rotation of the upstream; no failed request', async () => {
    const port = await proxy.listenerPort('outbound');
    const load = steadyLoad(port, {
      h1Clients: 2,
      h2Clients: 1,
      probeEveryMs: 100,
      maxRequests: 1_000_000,
      body: 'ok',
    });
    try {
      await until('traffic', async () => load.ok > 30, 30_000);
      assert.ok(loggedSerials().includes(serialOf(first)), 'nginx saw the first certificate');

      const from = cp.log.length;
      version += 1;
      cp.set(snapshot(second, [pki.ca]));
      await secretsAcked(from);
      const seen = loggedSerials().length;
      await until(
        'nginx to see the new certificate',
        async () => loggedSerials().slice(seen).includes(serialOf(second)),
        30_000,
      );

      // A second root joins the bundle; the upstream's certificate still chains to the first.
      const widened = cp.log.length;
      version += 1;
      cp.set(snapshot(second, [pki.ca, newCa]));
      await secretsAcked(widened);
      const okBefore = load.ok;
      await until('traffic after the bundle rotation', async () => load.ok > okBefore + 50, 30_000);

      // The upstream moves to a certificate of the second root, then the first root goes.
      const moved = cp.log.length;
      version += 1;
      cp.set(snapshot(second, [pki.ca, newCa], nginx2.port));
      await cp.waitFor(
        (l) =>
          l.event === 'delta_response' &&
          String(l.type_url).endsWith('.Cluster') &&
          l.system_version_info === String(version),
        30_000,
        moved,
      );
      await until(
        'requests on the upstream of the second root',
        async () => loggedSerials(accessLog2).length > 20,
        30_000,
      );
      assert.ok(
        loggedSerials(accessLog2).every((s) => s === serialOf(second)),
        'with the new client certificate',
      );
      const narrowed = cp.log.length;
      version += 1;
      cp.set(snapshot(second, [newCa], nginx2.port));
      await secretsAcked(narrowed);
      const onSecond = loggedSerials(accessLog2).length;
      await until(
        'traffic after the first root went',
        async () => loggedSerials(accessLog2).length > onSecond + 50,
        30_000,
      );
    } finally {
      const result = await load.stop();
      assert.deepEqual(result.failed, []);
      assert.equal(result.refused, 0);
    }
  });
});
