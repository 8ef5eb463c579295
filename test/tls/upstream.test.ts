/**
 * Upstream TLS end to end: a real proxy process in front of real HTTPS and HTTP/2-over-TLS
 * upstreams on 127.0.0.1, with certificates made by the test.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import * as http2 from 'node:http2';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as tls from 'node:tls';
import type { JsonObject } from '../../events/index.js';
import { cluster as staticCluster, tcpListener } from '../helpers/dataplane.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';
import { makePki, type TestPki } from './certs.js';
import { hcmListener } from './helpers.js';

const TLS_SOCKET = 'type.googleapis.com/envoy.api.v2.auth.UpstreamTlsContext';

/** A STATIC cluster of one 127.0.0.1 port; TLS handshakes get a longer connect timeout. */
function cluster(name: string, port: number, extra: JsonObject): JsonObject {
  return staticCluster(name, [port], { connect_timeout: '2s', ...extra });
}

function tlsSocket(context: JsonObject): JsonObject {
  return {
    transport_socket: {
      name: 'proxy.transport_sockets.tls',
      typed_config: { '@type': TLS_SOCKET, ...context },
    },
  };
}

async function get(port: number, path: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(5000) });
  return { status: res.status, body: await res.text() };
}

function counter(statsText: string, name: string): number {
  const line = statsText.split('\n').find((l) => l.startsWith(`${name}: `));
  return line ? Number(line.slice(name.length + 2)) : Number.NaN;
}

describe('upstream TLS', () => {
  let pki: TestPki;
  let h1: https.Server;
  let h2: http2.Http2SecureServer;
  let mtls: https.Server;
  let echo: tls.Server;
  let tcpPort: number;
  let proxy: ProxyProcess;
  let port: number;
  const seen: Array<{ sni: unknown; alpn: unknown; path: string }> = [];

  before(async () => {
    pki = makePki();
    const up = pki.leaf('upstream', ['DNS:upstream.test', 'DNS:*.wild.test', 'URI:spiffe://test/upstream']);
    const client = pki.leaf('proxy-client', ['URI:spiffe://test/proxy']);
    const other = pki.otherCa('other-ca');
    h1 = https.createServer({ cert: up.certPem, key: up.keyPem }, (req, res) => {
      const s = req.socket as tls.TLSSocket;
      seen.push({ sni: s.servername, alpn: s.alpnProtocol, path: req.url ?? '' });
      res.end(`h1 ${String(s.servername)}`);
    });
    h2 = http2.createSecureServer({ cert: up.certPem, key: up.keyPem }, (req, res) => {
      const s = req.socket as unknown as tls.TLSSocket;
      res.end(`h2 ${req.httpVersion} ${String(s.alpnProtocol)}`);
    });
    mtls = https.createServer(
      { cert: up.certPem, key: up.keyPem, ca: pki.ca.certPem, requestCert: true, rejectUnauthorized: true },
      (req, res) => {
        const peer = (req.socket as tls.TLSSocket).getPeerX509Certificate();
        res.end(`client ${peer?.subjectAltName ?? 'none'}`);
      },
    );
    echo = tls.createServer({ cert: up.certPem, key: up.keyPem }, (socket) => {
      socket.once('data', (d: Buffer) => socket.end(`echo ${d} (${String(socket.servername)})`));
    });
    const listen = (s: https.Server | http2.Http2SecureServer | tls.Server) =>
      new Promise<number>((resolve) =>
        s.listen(0, '127.0.0.1', () => resolve((s.address() as AddressInfo).port)),
      );
    const [p1, p2, p3, p4] = await Promise.all([listen(h1), listen(h2), listen(mtls), listen(echo)]);
    const ca = { trusted_ca: { filename: pki.ca.cert } };
    const bootstrap: JsonObject = {
      admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
      static_resources: {
        clusters: [
          // Deprecated tls_context, no trusted_ca: encrypted, not verified.
          cluster('off', p1, { tls_context: { sni: 'upstream.test' } }),
          cluster(
            'verified',
            p1,
            tlsSocket({ sni: 'upstream.test', common_tls_context: { validation_context: ca } }),
          ),
          cluster(
            'wrong_ca',
            p1,
            tlsSocket({
              common_tls_context: { validation_context: { trusted_ca: { inline_string: other.certPem } } },
            }),
          ),
          cluster(
            'san_ok',
            p1,
            tlsSocket({
              common_tls_context: {
                validation_context: { ...ca, match_subject_alt_names: [{ exact: 'a.wild.test' }] },
              },
            }),
          ),
          cluster(
            'san_bad',
            p1,
            tlsSocket({
              common_tls_context: { validation_context: { ...ca, verify_subject_alt_name: ['other.test'] } },
            }),
          ),
          // v3's typed matchers: the URI SAN as a URI passes; the same value asked of DNS SANs fails.
          cluster(
            'typed_san_ok',
            p1,
            tlsSocket({
              common_tls_context: {
                validation_context: {
                  ...ca,
                  match_typed_subject_alt_names: [
                    { san_type: 'URI', matcher: { exact: 'spiffe://test/upstream' } },
                  ],
                },
              },
            }),
          ),
          cluster(
            'typed_san_bad',
            p1,
            tlsSocket({
              common_tls_context: {
                validation_context: {
                  ...ca,
                  match_typed_subject_alt_names: [
                    { san_type: 'DNS', matcher: { exact: 'spiffe://test/upstream' } },
                  ],
                },
              },
            }),
          ),
          cluster('h2tls', p2, {
            http2_protocol_options: {},
            ...tlsSocket({ common_tls_context: { alpn_protocols: ['h2'], validation_context: ca } }),
          }),
          cluster(
            'mtls',
            p3,
            tlsSocket({
              common_tls_context: {
                validation_context: ca,
                tls_certificates: [
                  {
                    certificate_chain: { filename: client.cert },
                    private_key: { inline_string: client.keyPem },
                  },
                ],
              },
            }),
          ),
          cluster('mtls_nocert', p3, tlsSocket({ common_tls_context: { validation_context: ca } })),
          // One request per connection, so each request handshakes.
          cluster('resumed', p1, {
            max_requests_per_connection: 1,
            ...tlsSocket({ common_tls_context: { validation_context: ca } }),
          }),
          cluster('unresumed', p1, {
            max_requests_per_connection: 1,
            ...tlsSocket({ max_session_keys: 0, common_tls_context: { validation_context: ca } }),
          }),
          // Pins without trusted_ca: the certificate's SHA-256, then a wrong one.
          cluster(
            'pinned',
            p1,
            tlsSocket({
              common_tls_context: {
                validation_context: {
                  verify_certificate_hash: [new X509Certificate(up.certPem).fingerprint256],
                },
              },
            }),
          ),
          cluster(
            'mispinned',
            p1,
            tlsSocket({
              common_tls_context: { validation_context: { verify_certificate_hash: ['00'.repeat(32)] } },
            }),
          ),
          cluster(
            'tcp_tls',
            p4,
            tlsSocket({ sni: 'tcp.test', common_tls_context: { validation_context: ca } }),
          ),
        ],
        listeners: [
          hcmListener('in', [
            ['/off', 'off'],
            ['/verified', 'verified'],
            ['/wrong', 'wrong_ca'],
            ['/san-ok', 'san_ok'],
            ['/san-bad', 'san_bad'],
            ['/typed-san-ok', 'typed_san_ok'],
            ['/typed-san-bad', 'typed_san_bad'],
            ['/h2', 'h2tls'],
            ['/mtls-none', 'mtls_nocert'],
            ['/mtls', 'mtls'],
            ['/pinned', 'pinned'],
            ['/resumed', 'resumed'],
            ['/unresumed', 'unresumed'],
            ['/mispinned', 'mispinned'],
          ]),
          tcpListener('tcp', { stat_prefix: 'tcp', cluster: 'tcp_tls' }),
        ],
      },
    };
    proxy = await startProxyProcess(bootstrap, ['--concurrency', '1']);
    port = await proxy.listenerPort('in');
    tcpPort = await proxy.listenerPort('tcp');
  });

  after(async () => {
    await proxy?.stop();
    h1?.close();
    h2?.close();
    mtls?.close();
    echo?.close();
    pki?.remove();
  });

  it('encrypts without verifying when there is no trusted_ca, sending the configured SNI', async () => {
    const res = await get(port, '/off');
    assert.deepEqual(res, { status: 200, body: 'h1 upstream.test' });
    assert.equal(seen.at(-1)?.path, '/off');
  });

  /**
   * A request through the cluster whose upstream passes its checks answers 200, one through the
   * cluster whose upstream fails them 503, counted as `failure` there only; the passing
   * answer's body and the stats after.
   */
  async function passesAndFails(
    pass: { path: string; cluster: string },
    fail: { path: string; cluster: string },
    failure: string,
  ): Promise<{ body: string; stats: string }> {
    const passed = await get(port, pass.path);
    assert.equal(passed.status, 200);
    assert.equal((await get(port, fail.path)).status, 503);
    const stats = (await proxy.get('/stats')).body;
    assert.ok(counter(stats, `cluster.${fail.cluster}.ssl.${failure}`) >= 1, stats);
    assert.equal(counter(stats, `cluster.${pass.cluster}.ssl.${failure}`), 0);
    return { body: passed.body, stats };
  }

  it('verifies against trusted_ca: the right CA passes, a wrong one fails with 503 and fail_verify_error', async () => {
    const { body, stats } = await passesAndFails(
      { path: '/verified', cluster: 'verified' },
      { path: '/wrong', cluster: 'wrong_ca' },
      'fail_verify_error',
    );
    assert.equal(body, 'h1 upstream.test');
    assert.ok(counter(stats, 'cluster.wrong_ca.ssl.connection_error') >= 1);
    assert.equal(counter(stats, 'cluster.verified.ssl.handshake'), 1);
    // The reference's defaults: TLS 1.2 to upstreams, X25519 first.
    assert.equal(counter(stats, 'cluster.verified.ssl.versions.TLSv1.2'), 1);
    assert.equal(counter(stats, 'cluster.verified.ssl.curves.X25519'), 1);
  });

  it('checks subject alt names: a wildcard SAN matches, a mismatch fails with fail_verify_san', async () => {
    await passesAndFails(
      { path: '/san-ok', cluster: 'san_ok' },
      { path: '/san-bad', cluster: 'san_bad' },
      'fail_verify_san',
    );
  });

  it("checks v3's typed SAN matchers: only SANs of the matcher's type count", async () => {
    await passesAndFails(
      { path: '/typed-san-ok', cluster: 'typed_san_ok' },
      { path: '/typed-san-bad', cluster: 'typed_san_bad' },
      'fail_verify_san',
    );
  });

  it('speaks HTTP/2 over TLS when ALPN says h2', async () => {
    assert.deepEqual(await get(port, '/h2'), { status: 200, body: 'h2 2.0 h2' });
  });

  it('presents a client certificate to an upstream that requires one', async () => {
    assert.deepEqual(await get(port, '/mtls'), { status: 200, body: 'client URI:spiffe://test/proxy' });
    assert.equal((await get(port, '/mtls-none')).status, 503);
  });

  it('the TCP proxy relays over TLS to its upstream too', async () => {
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(tcpPort, '127.0.0.1', () => socket.write('ping'));
      let got = '';
      socket.on('data', (d: Buffer) => {
        got += d;
      });
      socket.on('end', () => resolve(got));
      socket.on('error', reject);
      socket.setTimeout(5000, () => socket.destroy(new Error('timeout')));
    });
    assert.equal(reply, 'echo ping (tcp.test)');
    const stats = (await proxy.get('/stats')).body;
    assert.equal(counter(stats, 'cluster.tcp_tls.ssl.handshake'), 1);
  });

  it('pins the certificate by its SHA-256 (verify_certificate_hash), fail_verify_cert_hash otherwise', async () => {
    const { stats } = await passesAndFails(
      { path: '/pinned', cluster: 'pinned' },
      { path: '/mispinned', cluster: 'mispinned' },
      'fail_verify_cert_hash',
    );
    assert.equal(counter(stats, 'cluster.pinned.ssl.handshake'), 1);
  });

  it('resumes TLS sessions on new connections unless max_session_keys is 0 (ssl.session_reused)', async () => {
    for (let i = 0; i < 3; i++) {
      assert.equal((await get(port, '/resumed')).status, 200);
      assert.equal((await get(port, '/unresumed')).status, 200);
    }
    const stats = (await proxy.get('/stats')).body;
    assert.equal(counter(stats, 'cluster.resumed.ssl.handshake'), 3);
    assert.equal(counter(stats, 'cluster.resumed.ssl.session_reused'), 2);
    assert.equal(counter(stats, 'cluster.unresumed.ssl.handshake'), 3);
    assert.equal(counter(stats, 'cluster.unresumed.ssl.session_reused'), 0);
  });
});
