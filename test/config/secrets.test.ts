/**
 * Static secrets (`static_resources.secrets`) named by TLS contexts through an
 * `sds_secret_config` without `sds_config`: a listener serving its certificate from one, a
 * cluster presenting a client certificate and verifying its upstream from others, in a real
 * proxy process with two workers; and the refusals at validate.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as tls from 'node:tls';
import type { JsonObject } from '../../events/index.js';
import { runCli } from '../helpers/bootstrap.js';
import { cluster as staticCluster } from '../helpers/dataplane.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';
import { makePki, type TestPki } from '../tls/certs.js';
import { type Answer, hcmListener, httpsGet } from '../tls/helpers.js';

const UPSTREAM_TLS = 'type.googleapis.com/envoy.api.v2.auth.UpstreamTlsContext';
const DOWNSTREAM_TLS = 'type.googleapis.com/envoy.api.v2.auth.DownstreamTlsContext';

/** A STATIC cluster of one 127.0.0.1 port; TLS handshakes get a longer connect timeout. */
function cluster(name: string, port: number, extra: JsonObject): JsonObject {
  return staticCluster(name, [port], { connect_timeout: '2s', ...extra });
}

function socket(type: string, context: JsonObject): JsonObject {
  return {
    transport_socket: { name: 'proxy.transport_sockets.tls', typed_config: { '@type': type, ...context } },
  };
}

function getOverTls(port: number, ca: string, path: string): Promise<Answer> {
  return httpsGet(port, { path, ca, servername: 'proxy.test' });
}

describe('static secrets', () => {
  let pki: TestPki;
  let upstream: https.Server;
  let proxy: ProxyProcess;
  let port: number;
  let serverKeyPem = '';

  before(async () => {
    pki = makePki();
    const up = pki.leaf('upstream', ['DNS:upstream.test']);
    const client = pki.leaf('proxy-client', ['URI:spiffe://test/proxy']);
    const server = pki.leaf('proxy-server', ['DNS:proxy.test']);
    serverKeyPem = server.keyPem;
    // The upstream insists on a client certificate signed by the test CA.
    upstream = https.createServer(
      { cert: up.certPem, key: up.keyPem, ca: pki.ca.certPem, requestCert: true, rejectUnauthorized: true },
      (req, res) => {
        const peer = (req.socket as tls.TLSSocket).getPeerCertificate();
        res.end(`client ${String(peer.subject?.CN)}`);
      },
    );
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const upPort = (upstream.address() as AddressInfo).port;
    const common = (extra: JsonObject) => ({
      tls_certificate_sds_secret_configs: [{ name: 'client_cert' }],
      ...extra,
    });
    const verified = (name: string) =>
      cluster(
        name,
        upPort,
        socket(UPSTREAM_TLS, {
          sni: 'upstream.test',
          common_tls_context: common({
            combined_validation_context: {
              default_validation_context: { match_subject_alt_names: [{ exact: 'upstream.test' }] },
              validation_context_sds_secret_config: { name: 'ca' },
            },
          }),
        }),
      );
    // A discovered cluster names the static secrets too (CDS from a file).
    const cds = join(pki.dir, 'cds.json');
    writeFileSync(
      cds,
      JSON.stringify({
        version_info: '1',
        resources: [{ '@type': 'type.googleapis.com/envoy.api.v2.Cluster', ...verified('discovered') }],
      }),
    );
    const bootstrap: JsonObject = {
      dynamic_resources: { cds_config: { path: cds } },
      admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
      static_resources: {
        secrets: [
          // Inline, so the redaction of its key is checked below.
          {
            name: 'server_cert',
            tls_certificate: {
              certificate_chain: { inline_string: server.certPem },
              private_key: { inline_string: server.keyPem },
            },
          },
          {
            name: 'client_cert',
            tls_certificate: {
              certificate_chain: { filename: client.cert },
              private_key: { filename: client.key },
            },
          },
          { name: 'ca', validation_context: { trusted_ca: { filename: pki.ca.cert } } },
        ],
        clusters: [
          verified('verified'),
          // The secret's CA merged with a SAN the upstream does not have: refused.
          cluster(
            'wrong_san',
            upPort,
            socket(UPSTREAM_TLS, {
              common_tls_context: common({
                combined_validation_context: {
                  default_validation_context: { match_subject_alt_names: [{ exact: 'other.test' }] },
                  validation_context_sds_secret_config: { name: 'ca' },
                },
              }),
            }),
          ),
        ],
        listeners: [
          hcmListener(
            'in',
            [
              ['/ok', 'verified'],
              ['/discovered', 'discovered'],
              ['/san', 'wrong_san'],
            ],
            socket(DOWNSTREAM_TLS, {
              common_tls_context: { tls_certificate_sds_secret_configs: [{ name: 'server_cert' }] },
            }),
          ),
        ],
      },
    };
    proxy = await startProxyProcess(bootstrap, ['--concurrency', '2']);
    port = await proxy.listenerPort('in');
  });

  after(async () => {
    await proxy?.stop();
    upstream?.close();
    pki?.remove();
  });

  it('a listener serves the certificate of its secret, a cluster presents and verifies with its secrets', async () => {
    const res = await getOverTls(port, pki.ca.certPem, '/ok');
    assert.deepEqual(res, { status: 200, body: 'client proxy-client', cn: 'proxy-server' });
    assert.equal((await getOverTls(port, pki.ca.certPem, '/san')).status, 503);
  });

  it('a cluster from CDS names the static secrets as a static one does', async () => {
    const res = await getOverTls(port, pki.ca.certPem, '/discovered');
    assert.deepEqual(res, { status: 200, body: 'client proxy-client', cn: 'proxy-server' });
  });

  it('never shows the inline key of a secret in /config_dump or /certs', async () => {
    const keyBody = serverKeyPem.split('\n')[1] ?? '';
    assert.ok(keyBody.length > 20);
    for (const path of ['/config_dump', '/config_dump?include_eds', '/certs']) {
      const { status, body } = await proxy.get(path);
      assert.equal(status, 200);
      assert.ok(!body.includes(keyBody), `${path} shows the key`);
    }
    const dump = JSON.parse((await proxy.get('/config_dump')).body) as { configs: JsonObject[] };
    const secrets = dump.configs.find((c) => String(c['@type']).endsWith('SecretsConfigDump')) as {
      static_secrets: Array<{ name: string; secret: { tls_certificate?: { private_key: JsonObject } } }>;
    };
    const server = secrets.static_secrets.find((s) => s.name === 'server_cert');
    assert.deepEqual(server?.secret.tls_certificate?.private_key, { inline_string: '[redacted]' });
    assert.deepEqual(
      secrets.static_secrets.map((s) => s.name),
      ['server_cert', 'client_cert', 'ca'],
    );
  });
});

describe('static secrets at validate', () => {
  const cert = `tls_certificate: { certificate_chain: { filename: /nonexistent.crt }, private_key: { filename: /nonexistent.key } }`;
  const clusterYaml = (common: string) =>
    `static_resources: { secrets: [{ name: s, ${cert} }], clusters: [{ name: t, load_assignment: { cluster_name: t, endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: 127.0.0.1, port_value: 443 } } } }] }] }, tls_context: { common_tls_context: { ${common} } } }] }`;

  it('refuses a reference to a secret that does not exist, naming the field', async () => {
    const out = await runCli([
      '--mode',
      'validate',
      '--config-yaml',
      clusterYaml('validation_context_sds_secret_config: { name: missing }'),
    ]);
    assert.equal(out.status, 1);
    assert.match(
      out.stderr,
      /clusters\[0\]\.tls_context\.common_tls_context\.validation_context_sds_secret_config\.name: no secret named 'missing'/,
    );
  });

  it('a secret from SDS (sds_config) must name a static management cluster: one that is not is named', async () => {
    const out = await runCli([
      '--mode',
      'validate',
      '--config-yaml',
      clusterYaml(
        'tls_certificate_sds_secret_configs: [{ name: s, sds_config: { api_config_source: { api_type: GRPC, grpc_services: [{ envoy_grpc: { cluster_name: nowhere } }] } } }]',
      ),
    ]);
    assert.equal(out.status, 1);
    assert.match(
      out.stderr,
      /tls_certificate_sds_secret_configs\[0\]\.sds_config: management cluster 'nowhere' is not a static/,
    );
  });

  it('compiles the secret where it is named: its unreadable file is reported', async () => {
    const out = await runCli([
      '--mode',
      'validate',
      '--config-yaml',
      clusterYaml('tls_certificate_sds_secret_configs: [{ name: s }]'),
    ]);
    assert.equal(out.status, 1);
    assert.match(out.stderr, /secrets\['s'\]\.tls_certificate\.certificate_chain\.filename: cannot read/);
  });
});
