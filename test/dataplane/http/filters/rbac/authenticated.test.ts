/**
 * RBAC `authenticated` principals over a real mTLS listener: the proxy process asks for a
 * client certificate (trusted_ca, not required) and an ALLOW policy names the peers it lets
 * in by URI SAN, DNS SAN or subject. Clients with other certificates, or none, get 403.
 */
import assert from 'node:assert/strict';
import * as http2 from 'node:http2';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../../../../events/index.js';
import { SETTLE_MS, settle } from '../../../../helpers/dataplane.js';
import { answeringRoutes } from '../../../../helpers/http-dataplane.js';
import { type ProxyProcess, startProxyProcess } from '../../../../helpers/proxy-process.js';
import { type Issued, makePki, type TestPki } from '../../../../tls/certs.js';
import { httpsGet, mtlsHcmListener } from '../../../../tls/helpers.js';

const principal = (match: JsonObject): JsonObject => ({ authenticated: { principal_name: match } });

function bootstrap(server: Issued, ca: Issued): JsonObject {
  return {
    admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
    static_resources: {
      listeners: [
        mtlsHcmListener(
          'mtls',
          server,
          ca,
          {
            route_config: answeringRoutes('in'),
            http_filters: [
              {
                name: 'envoy.filters.http.rbac',
                typed_config: {
                  '@type': 'type.googleapis.com/envoy.config.filter.http.rbac.v2.RBAC',
                  rules: {
                    action: 'ALLOW',
                    policies: {
                      'service-account': {
                        permissions: [{ any: true }],
                        principals: [
                          principal({ exact: 'spiffe://cluster.local/ns/default/sa/allowed' }),
                          principal({ suffix: '.allowed.test' }),
                          principal({ exact: 'CN=by-subject' }),
                        ],
                      },
                    },
                  },
                },
              },
              { name: 'envoy.filters.http.router' },
            ],
          },
          ['h2', 'http/1.1'],
        ),
      ],
    },
  };
}

describe('envoy.filters.http.rbac authenticated principals', () => {
  let pki: TestPki;
  let proxy: ProxyProcess;
  let port: number;
  const client = new Map<string, Issued>();

  const get = (name: string | null) => {
    const cert = name === null ? undefined : client.get(name);
    return httpsGet(port, {
      servername: 'proxy.test',
      ca: pki.ca.certPem,
      ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}),
    });
  };

  before(async () => {
    pki = makePki();
    const server = pki.leaf('proxy.test', ['DNS:proxy.test']);
    client.set('allowed', pki.leaf('allowed', ['URI:spiffe://cluster.local/ns/default/sa/allowed']));
    client.set('other', pki.leaf('other', ['URI:spiffe://cluster.local/ns/default/sa/other']));
    client.set('dns', pki.leaf('dns', ['DNS:api.allowed.test']));
    // A URI SAN that does not match does not hide a DNS SAN that does.
    client.set('uri-then-dns', pki.leaf('uri-then-dns', ['URI:spiffe://x/y', 'DNS:b.allowed.test']));
    client.set('by-subject', pki.leaf('by-subject', []));
    client.set('not-subject', pki.leaf('not-subject', []));
    proxy = await startProxyProcess(bootstrap(server, pki.ca), ['--concurrency', '2']);
    port = await proxy.listenerPort('mtls');
  });

  after(async () => {
    await proxy?.stop();
    pki?.remove();
  });

  it('lets in the client whose URI SAN matches and refuses another with 403', async () => {
    assert.deepEqual(await get('allowed'), { status: 200, body: 'in', cn: 'proxy.test' });
    assert.deepEqual(await get('other'), { status: 403, body: 'RBAC: access denied', cn: 'proxy.test' });
  });

  it('falls back to the DNS SANs, then the RFC 2253 subject', async () => {
    assert.equal((await get('dns')).status, 200);
    assert.equal((await get('uri-then-dns')).status, 200);
    assert.equal((await get('by-subject')).status, 200);
    assert.equal((await get('not-subject')).status, 403);
  });

  it('refuses a TLS client without a certificate', async () => {
    assert.equal((await get(null)).status, 403);
  });

  it('reads the certificate over HTTP/2 too', async () => {
    const status = async (name: string) => {
      const cert = client.get(name) as Issued;
      const session = http2.connect(`https://127.0.0.1:${port}`, {
        ca: pki.ca.certPem,
        servername: 'proxy.test',
        cert: cert.certPem,
        key: cert.keyPem,
      });
      try {
        return await new Promise<number>((resolve, reject) => {
          const req = session.request({ ':path': '/' });
          req.on('response', (h) => resolve(Number(h[':status'])));
          req.on('error', reject);
          req.setTimeout(5000, () => reject(new Error('timeout')));
          req.resume();
        });
      } finally {
        session.close();
      }
    };
    assert.equal(await status('allowed'), 200);
    assert.equal(await status('other'), 403);
  });

  it('counts each decision', async () => {
    const count = async (name: string) =>
      Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec((await proxy.get('/stats')).body)?.[1] ?? 0);
    assert.equal(await settle(() => count('http\\.mtls\\.rbac\\.allowed'), 5, SETTLE_MS), 5);
    assert.equal(await settle(() => count('http\\.mtls\\.rbac\\.denied'), 4, SETTLE_MS), 4);
  });
});
