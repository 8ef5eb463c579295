/**
 * `/certs` lists every loaded certificate with the values `openssl x509` prints for it,
 * `server.days_until_first_cert_expiring` follows the first to expire, and no private key
 * text leaves the process: not in any admin answer, the event log or `proxy replay`.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { runProxy } from '../helpers/cli.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';
import { type Issued, makePki, type TestPki, x509 } from './certs.js';
import { hcmListener } from './helpers.js';

interface Details {
  path: string;
  serial_number: string;
  subject_alt_names: Array<Record<string, string>>;
  days_until_expiration: string;
  valid_from: string;
  expiration_time: string;
}

const DAY = 86_400_000;

/** What `openssl x509` says of a certificate, in the shape `/certs` prints. */
function expected(cert: Issued, path: string): Omit<Details, 'days_until_expiration'> & { notAfter: number } {
  const serial = x509(cert.cert, ['-serial'])
    .replace(/^serial=/, '')
    .toLowerCase();
  const notBefore = Date.parse(x509(cert.cert, ['-startdate']).replace(/^notBefore=/, ''));
  const notAfter = Date.parse(x509(cert.cert, ['-enddate']).replace(/^notAfter=/, ''));
  const sanText = x509(cert.cert, ['-ext', 'subjectAltName']).split('\n').slice(1).join('').trim();
  const sans = sanText
    ? sanText.split(', ').map((e): Record<string, string> => {
        const [kind, value] = [e.slice(0, e.indexOf(':')), e.slice(e.indexOf(':') + 1)];
        return kind === 'DNS' ? { dns: value } : kind === 'URI' ? { uri: value } : { ip_address: value };
      })
    : [];
  const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
  return {
    path,
    serial_number: serial,
    subject_alt_names: sans,
    valid_from: iso(notBefore),
    expiration_time: iso(notAfter),
    notAfter,
  };
}

function check(actual: Details, want: ReturnType<typeof expected>): void {
  const { notAfter, ...fields } = want;
  const { days_until_expiration, ...rest } = actual;
  assert.deepEqual(rest, fields);
  const days = Math.floor((notAfter - Date.now()) / DAY);
  assert.ok([days, days + 1].includes(Number(days_until_expiration)), `${days_until_expiration} vs ${days}`);
}

describe('/certs and secrets', () => {
  let pki: TestPki;
  let proxy: ProxyProcess;
  let server: Issued;
  let client: Issued;
  let log: string;
  const needles: string[] = [];

  before(async () => {
    pki = makePki();
    server = pki.leaf('server', ['DNS:server.test', 'IP:127.0.0.1']);
    client = pki.leaf('client', ['URI:spiffe://test/client']);
    log = join(pki.dir, 'events.ndjson');
    const clientKeyBytes = Buffer.from(client.keyPem).toString('base64');
    // A line of each key's body, and a run of the inline_bytes form.
    needles.push(server.keyPem.split('\n')[2] as string, client.keyPem.split('\n')[2] as string);
    needles.push(clientKeyBytes.slice(40, 100));
    const bootstrap: JsonObject = {
      admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
      static_resources: {
        clusters: [
          {
            name: 'secure',
            connect_timeout: '1s',
            load_assignment: {
              cluster_name: 'secure',
              endpoints: [
                {
                  lb_endpoints: [
                    { endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: 1 } } } },
                  ],
                },
              ],
            },
            tls_context: {
              common_tls_context: {
                tls_certificates: [
                  {
                    certificate_chain: { filename: client.cert },
                    private_key: { inline_bytes: clientKeyBytes },
                  },
                ],
                validation_context: { trusted_ca: { filename: pki.ca.cert } },
              },
            },
          },
        ],
        listeners: [
          hcmListener('tls', [['/', 'secure']], {
            tls_context: {
              common_tls_context: {
                tls_certificates: [
                  {
                    certificate_chain: { inline_string: server.certPem },
                    private_key: { inline_string: server.keyPem },
                  },
                ],
              },
            },
          }),
        ],
      },
    };
    proxy = await startProxyProcess(bootstrap, ['--concurrency', '1', '--event-log', log]);
  });

  after(async () => {
    await proxy?.stop();
    pki?.remove();
  });

  it('/certs shows each context with the values openssl x509 prints', async () => {
    const res = await proxy.get('/certs');
    assert.equal(res.status, 200);
    const json = JSON.parse(res.body) as {
      certificates: Array<{ ca_cert: Details[]; cert_chain: Details[] }>;
    };
    assert.equal(json.certificates.length, 2);
    const [cluster, listener] = json.certificates as [
      { ca_cert: Details[]; cert_chain: Details[] },
      { ca_cert: Details[]; cert_chain: Details[] },
    ];
    assert.equal(cluster.ca_cert.length, 1);
    check(cluster.ca_cert[0] as Details, expected(pki.ca, pki.ca.cert));
    assert.equal(cluster.cert_chain.length, 1);
    check(cluster.cert_chain[0] as Details, expected(client, client.cert));
    assert.deepEqual(listener.ca_cert, []);
    check(listener.cert_chain[0] as Details, expected(server, '<inline>'));
  });

  it('server.days_until_first_cert_expiring counts down to the first certificate to expire', async () => {
    const first = Math.min(...[pki.ca, server, client].map((c) => expected(c, '').notAfter));
    const days = Math.floor((first - Date.now()) / DAY);
    const stats = (await proxy.get('/stats?filter=days_until_first_cert_expiring')).body;
    const value = Number(/server\.days_until_first_cert_expiring: (\d+)/.exec(stats)?.[1]);
    assert.ok([days, days + 1].includes(value), stats);
  });

  it('no key text in any admin answer, the event log or replay output', async () => {
    const outputs: Array<[string, string]> = [];
    for (const path of [
      '/config_dump',
      '/config_dump?include_eds',
      '/events',
      '/events?limit=1000',
      '/server_info',
    ]) {
      const res = await proxy.get(path);
      outputs.push([path, res.body]);
    }
    const dump = outputs[0]?.[1] ?? '';
    assert.match(dump, /\[redacted\]/);
    assert.ok(dump.includes(client.cert), 'file names are kept');
    const seq = /"seq":\s*(\d+)/.exec(outputs[2]?.[1] ?? '')?.[1];
    if (seq) outputs.push([`/config_dump?at=${seq}`, (await proxy.get(`/config_dump?at=${seq}`)).body]);
    await proxy.stop();
    outputs.push(['event log', readFileSync(log, 'utf8')]);
    for (const view of ['snapshot', 'config_dump', 'listeners', 'clusters']) {
      const run = await runProxy(['replay', log, '--view', view], {}, 30000);
      assert.equal(run.code, 0, run.stderr);
      outputs.push([`replay --view ${view}`, run.stdout + run.stderr]);
    }
    for (const [where, text] of outputs) {
      for (const needle of needles) assert.ok(!text.includes(needle), `key text in ${where}`);
    }
  });
});
