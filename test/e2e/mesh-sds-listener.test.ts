/**
 * A mesh sidecar's inbound listener: mTLS whose server certificate and client trust bundle
 * both come by SDS from the real go-control-plane server (ADS, state of the world and delta),
 * at --concurrency 2, with clients sending requests over mTLS all along while the server
 * rotates the certificate and then the CA bundle (old CA, then old plus new, then new alone):
 * no request fails, new handshakes present the new certificate (its serial) and are judged by
 * the new bundle, a connection made before keeps working, and `/certs` and `/config_dump` show
 * the new secret with no key material there, in `/events`, the event-log file or the log.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as https from 'node:https';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as tls from 'node:tls';
import type { JsonObject } from '../../events/index.js';
import {
  GoControlPlane,
  type LogLine,
  type Snapshot,
  skipGoControlPlane,
} from '../helpers/go-control-plane.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';
import { certificateSecret, certSerials, serialOf, trustSecret } from '../helpers/sds-secrets.js';
import {
  ADMIN,
  adsConfig,
  httpListener,
  staticCluster,
  type Upstream,
  until,
  upstream,
} from '../helpers/xds-fixtures.js';
import { type Issued, makePki, type TestPki } from '../tls/certs.js';

const ADS_V3 = { ads: {}, resource_api_version: 'V3' };
const ANSWER_MS = 20_000;

/** The inbound listener: both halves of its mTLS by SDS over ADS, a client certificate required. */
function inboundListener(): JsonObject {
  const listener = httpListener('inbound', 'local_app');
  const chain = (listener.filter_chains as JsonObject[])[0]!;
  chain.transport_socket = {
    name: 'envoy.transport_sockets.tls',
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext',
      require_client_certificate: true,
      common_tls_context: {
        tls_certificate_sds_secret_configs: [{ name: 'inbound-cert', sds_config: ADS_V3 }],
        validation_context_sds_secret_config: { name: 'inbound-trust', sds_config: ADS_V3 },
      },
    },
  };
  return listener;
}

interface Answer {
  body: string;
  serial: string;
  reused: boolean;
}

/** One GET over mTLS presenting `client`, trusting `cas`; bounded by ANSWER_MS. */
function mtlsGet(port: number, client: Issued, cas: string[], agent: https.Agent | false): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      {
        host: '127.0.0.1',
        port,
        path: '/',
        agent,
        cert: client.certPem,
        key: client.keyPem,
        ca: cas,
        servername: 'inbound.mesh',
      },
      (res) => {
        const socket = res.socket as tls.TLSSocket;
        const serial = socket.getPeerX509Certificate()?.serialNumber.toLowerCase() ?? '';
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          body += d;
        });
        res.on('end', () =>
          res.statusCode === 200
            ? resolve({ body, serial, reused: req.reusedSocket })
            : reject(new Error(`status ${res.statusCode}: ${body.slice(0, 80)}`)),
        );
        res.on('error', reject);
      },
    );
    req.setTimeout(ANSWER_MS, () => req.destroy(new Error(`no answer within ${ANSWER_MS / 1000} s`)));
    req.on('error', reject);
  });
}

/**
 * Clients on kept-alive mTLS connections and a prober that makes a new handshake for each
 * request, until stopped or `maxRequests`; the prober's serials say what new handshakes get.
 */
function mtlsLoad(port: number, client: Issued, cas: string[], maxRequests = 20_000) {
  let stopped = false;
  let sent = 0;
  const state = { ok: 0, failed: [] as string[], probeSerials: [] as string[] };
  const agents = [0, 1].map(() => new https.Agent({ keepAlive: true, maxSockets: 1 }));
  const loop = async (agent: https.Agent | false, pauseMs: number) => {
    while (!stopped && sent < maxRequests) {
      sent += 1;
      try {
        const answer = await mtlsGet(port, client, cas, agent);
        if (answer.body !== 'app') state.failed.push(`body ${answer.body.slice(0, 40)}`);
        else state.ok += 1;
        if (agent === false) state.probeSerials.push(answer.serial);
      } catch (err) {
        state.failed.push(`${agent === false ? 'probe' : 'kept'}: ${(err as Error).message}`);
      }
      if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
    }
  };
  const done = Promise.all([...agents.map((a) => loop(a, 0)), loop(false, 50)]);
  return {
    state,
    async stop() {
      stopped = true;
      await done;
      for (const a of agents) a.destroy();
      return state;
    },
  };
}

/** The body line of a PEM key: a piece of key material no output may hold. */
const keyLine = (cert: Issued) => cert.keyPem.split('\n')[1]!;

for (const apiType of ['GRPC', 'DELTA_GRPC'] as const)
  describe(`an inbound mTLS listener whose secrets rotate by SDS from go-control-plane (${apiType}, --concurrency 2)`, {
    skip: skipGoControlPlane,
    timeout: 240_000,
  }, () => {
    let pki: TestPki;
    let newCa: Issued;
    let cp: GoControlPlane;
    let proxy: ProxyProcess;
    let app: Upstream;
    let serverA: Issued;
    let serverB: Issued;
    let clientOld: Issued;
    let clientNew: Issued;
    let eventLog: string;
    let version = 0;

    const snapshot = (v: string, cert: Issued, bundle: Issued[]): Snapshot => ({
      node_id: 'sidecar',
      version: v,
      secrets: [certificateSecret('inbound-cert', cert), trustSecret('inbound-trust', bundle)],
    });

    /** Serves `cert` and `bundle` as the next version; resolves once the proxy ACKed it. */
    const push = async (cert: Issued, bundle: Issued[]): Promise<void> => {
      version += 1;
      const from = cp.log.length;
      cp.set(snapshot(String(version), cert, bundle));
      await secretsAcked(String(version), from);
    };

    /** The secrets of snapshot `v` ACKed (not NACKed) on the proxy's stream. */
    const secretsAcked = async (v: string, from: number): Promise<LogLine> => {
      if (apiType === 'GRPC') return cp.ack('Secret', v, 30_000, from);
      return cp.deltaAck(
        `secrets of version ${v}`,
        (l) => String(l.type_url).endsWith('Secret') && l.system_version_info === v,
        from,
      );
    };

    before(async () => {
      pki = makePki();
      newCa = pki.otherCa('mesh-root-2');
      serverA = pki.leaf('inbound-a', ['DNS:inbound.mesh']);
      serverB = pki.leaf('inbound-b', ['DNS:inbound.mesh']);
      clientOld = pki.leaf('client-old', ['URI:spiffe://mesh/ns/default/sa/front']);
      clientNew = pki.leaf('client-new', ['URI:spiffe://mesh/ns/default/sa/front'], newCa);
      app = await upstream('app');
      eventLog = join(pki.dir, 'events.jsonl');
      version = 1;
      cp = await GoControlPlane.start(snapshot('1', serverA, [pki.ca]));
      proxy = await startProxyProcess(
        {
          admin: ADMIN,
          node: { id: 'sidecar', cluster: 'mesh' },
          dynamic_resources: { ads_config: { ...adsConfig('V3'), api_type: apiType } },
          static_resources: {
            listeners: [inboundListener()],
            clusters: [staticCluster('local_app', [app.port]), staticCluster('xds_cluster', [cp.port], true)],
          },
        },
        ['--concurrency', '2', '--event-log', eventLog],
      );
      await secretsAcked('1', 0);
    });

    after(async () => {
      await proxy?.stop();
      await cp?.stop();
      await app?.close();
      pki?.remove();
    });

    it('serves mTLS with the pushed secrets, then rotates the certificate and the CA bundle under load with no failed request', async () => {
      const port = await proxy.listenerPort('inbound');
      const trust = [pki.ca.certPem];
      const first = await mtlsGet(port, clientOld, trust, false);
      assert.equal(first.body, 'app');
      assert.equal(first.serial, serialOf(serverA));
      await assert.rejects(
        mtlsGet(port, clientNew, trust, false),
        'a client of the CA not yet trusted is refused',
      );

      // A connection made before any rotation: it must outlive all of them.
      const keptAgent = new https.Agent({ keepAlive: true, maxSockets: 1 });
      try {
        assert.equal((await mtlsGet(port, clientOld, trust, keptAgent)).reused, false);
        const load = mtlsLoad(port, clientOld, trust);
        await until('traffic', async () => load.state.ok > 20, 30_000);

        await push(serverB, [pki.ca]);
        const probed = load.state.probeSerials.length;
        await until(
          'a new handshake presenting the new certificate',
          async () => load.state.probeSerials.slice(probed).includes(serialOf(serverB)),
          30_000,
        );
        await until(
          '/certs to show the new serial',
          async () => (await certSerials(proxy)).includes(serialOf(serverB)),
          30_000,
        );
        assert.ok(
          !(await certSerials(proxy)).includes(serialOf(serverA)),
          '/certs no longer lists the old certificate',
        );

        // The CA bundle rotates as a mesh rotates its root: old plus new, while the load runs on the old.
        await push(serverB, [pki.ca, newCa]);
        await until(
          'a client of the new CA accepted',
          () =>
            mtlsGet(port, clientNew, trust, false).then(
              (a) => a.body === 'app',
              () => false,
            ),
          30_000,
        );
        const okBefore = load.state.ok;
        await until(
          'more traffic after the bundle rotation',
          async () => load.state.ok > okBefore + 20,
          30_000,
        );
        const result = await load.stop();
        assert.deepEqual(result.failed, []);
        assert.ok(
          result.probeSerials.slice(-3).every((s) => s === serialOf(serverB)),
          'new handshakes stay on the new certificate',
        );

        // Then the new root alone: the old CA's clients are refused on new handshakes ...
        await push(serverB, [newCa]);
        await until(
          'a client of the old CA refused',
          () =>
            mtlsGet(port, clientOld, trust, false).then(
              () => false,
              () => true,
            ),
          30_000,
        );
        assert.equal((await mtlsGet(port, clientNew, trust, false)).serial, serialOf(serverB));
        // ... and the connection made before every rotation carries on with what it had.
        const kept = await mtlsGet(port, clientOld, trust, keptAgent);
        assert.equal(kept.reused, true, 'the same connection');
        assert.equal(kept.serial, serialOf(serverA), 'still on the certificate it was made with');
        assert.equal(kept.body, 'app');
      } finally {
        keptAgent.destroy();
      }
    });

    it('a management server restart resubscribes to the secrets it holds and rotates nothing', async () => {
      const port = await proxy.listenerPort('inbound');
      const updates = () =>
        proxy
          .stderr()
          .split('\n')
          .filter((l) => l.includes("sds: secret 'inbound-")).length;
      const updatesBefore = updates();
      assert.ok(updatesBefore >= 4, `the log names each secret update (${updatesBefore})`);
      const cpPort = cp.port;
      await cp.stop();
      assert.equal(
        (await mtlsGet(port, clientNew, [pki.ca.certPem], false)).body,
        'app',
        'serves while it is down',
      );
      cp = await GoControlPlane.start(snapshot(String(version), serverB, [newCa]), ['-port', String(cpPort)]);
      const resubscribed = await cp.waitFor(
        (l) =>
          (l.event === 'request' || l.event === 'delta_request') && String(l.type_url).endsWith('Secret'),
        60_000,
      );
      if (apiType === 'DELTA_GRPC')
        assert.deepEqual(Object.keys(resubscribed.initial_resource_versions as object).sort(), [
          'inbound-cert',
          'inbound-trust',
        ]);
      else assert.equal(resubscribed.version_info, String(version), 'the version it holds');
      // The same content again (state of the world may send it): no secret changes.
      await new Promise((r) => setTimeout(r, 1000));
      assert.equal(updates(), updatesBefore, 'no secret set again');
      assert.equal((await mtlsGet(port, clientNew, [pki.ca.certPem], false)).serial, serialOf(serverB));
    });

    it('/config_dump shows the new secret versions; no output holds either private key', async () => {
      const dump = (await proxy.get('/config_dump?include_eds')).body;
      const secrets = (
        JSON.parse(dump) as {
          configs: Array<{
            '@type': string;
            dynamic_active_secrets?: Array<{ name: string; version_info: string; secret: JsonObject }>;
          }>;
        }
      ).configs.find((c) => c['@type'].endsWith('SecretsConfigDump'))?.dynamic_active_secrets;
      const cert = secrets?.find((s) => s.name === 'inbound-cert');
      assert.ok(cert, 'inbound-cert in the dump');
      // State of the world: the version of a response that carried it (the reference keeps the
      // one that changed it); delta: the server's version of the resource itself.
      const snap = cp.log.findLast((l) => l.event === 'snapshot') as {
        resource_versions?: Record<string, Record<string, string>>;
      };
      const expected =
        apiType === 'GRPC'
          ? ['2', String(version)]
          : [Object.values(snap.resource_versions ?? {}).find((v) => 'inbound-cert' in v)?.['inbound-cert']];
      assert.ok(
        expected.includes(cert.version_info),
        `version ${cert.version_info}, expected one of ${expected.join(', ')}`,
      );
      assert.ok(JSON.stringify(cert.secret).includes(serverB.certPem.split('\n')[1]!), 'the new certificate');
      assert.match(JSON.stringify(cert.secret), /\[redacted\]/);
      const outputs: Record<string, string> = {
        '/config_dump': dump,
        '/events': (await proxy.get('/events?format=json')).body,
        '/certs': (await proxy.get('/certs')).body,
        'the event-log file': readFileSync(eventLog, 'utf8'),
        'the log': proxy.stderr(),
      };
      for (const [where, text] of Object.entries(outputs))
        for (const key of [serverA, serverB])
          assert.ok(!text.includes(keyLine(key)), `no key material in ${where}`);
      assert.match(outputs['/events']!, /inbound-cert/, '/events records the secret updates');
    });
  });
