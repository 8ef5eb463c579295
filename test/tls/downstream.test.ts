/**
 * Downstream TLS end to end: a real proxy process whose listener picks a filter chain from
 * the ClientHello (SNI, ALPN, TLS or not) with no TLS inspector configured, serves each
 * chain's certificate, speaks HTTP/2 when ALPN says h2, and checks client certificates.
 */
import assert from 'node:assert/strict';
import * as http2 from 'node:http2';
import { after, before, describe, it } from 'node:test';
import * as tls from 'node:tls';
import type { JsonObject } from '../../events/index.js';
import { type ProxyProcess, startProxyProcess } from '../helpers/proxy-process.js';
import { type Issued, makePki, type TestPki } from './certs.js';
import { httpsGet } from './helpers.js';

const DOWNSTREAM_TLS = 'type.googleapis.com/envoy.api.v2.auth.DownstreamTlsContext';

function chain(body: string, extra: JsonObject): JsonObject {
  return {
    ...extra,
    filters: [
      {
        name: 'proxy.filters.network.http_connection_manager',
        typed_config: {
          '@type':
            'type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager',
          stat_prefix: body,
          route_config: {
            virtual_hosts: [
              {
                name: 'all',
                domains: ['*'],
                routes: [
                  { match: { prefix: '/' }, direct_response: { status: 200, body: { inline_string: body } } },
                ],
              },
            ],
          },
          http_filters: [{ name: 'proxy.filters.http.router' }],
        },
      },
    ],
  };
}

function serverTls(cert: Issued, context: JsonObject = {}, common: JsonObject = {}): JsonObject {
  return {
    transport_socket: {
      name: 'proxy.transport_sockets.tls',
      typed_config: {
        '@type': DOWNSTREAM_TLS,
        common_tls_context: {
          tls_certificates: [
            { certificate_chain: { filename: cert.cert }, private_key: { filename: cert.key } },
          ],
          ...common,
        },
        ...context,
      },
    },
  };
}

async function counters(proxy: ProxyProcess, pattern: RegExp): Promise<Map<string, number>> {
  const text = (await proxy.get('/stats')).body;
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [name, value] = line.split(': ');
    if (name && pattern.test(name))
      out.set(name.replace(/^listener\.[\d.]+_\d+\./, 'listener.'), Number(value));
  }
  return out;
}

describe('downstream TLS', () => {
  let pki: TestPki;
  let proxy: ProxyProcess;
  let sniPort: number;
  let mtlsPort: number;
  let client: Issued;
  const ca = () => pki.ca.certPem;

  before(async () => {
    pki = makePki();
    const a = pki.leaf('a.test', ['DNS:a.test']);
    const b = pki.leaf('b.test', ['DNS:*.b.test']);
    const m = pki.leaf('mtls.test', ['DNS:mtls.test']);
    client = pki.leaf('client', ['URI:spiffe://test/client']);
    const bootstrap: JsonObject = {
      admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
      static_resources: {
        listeners: [
          {
            name: 'sni',
            address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
            filter_chains: [
              chain('chain-a', {
                filter_chain_match: { server_names: ['a.test'] },
                ...serverTls(a, {}, { alpn_protocols: ['h2', 'http/1.1'] }),
              }),
              // The deprecated tls_context spelling, and a wildcard name.
              chain('chain-b', {
                filter_chain_match: { server_names: ['*.b.test'] },
                tls_context: {
                  common_tls_context: {
                    tls_certificates: [
                      { certificate_chain: { filename: b.cert }, private_key: { inline_string: b.keyPem } },
                    ],
                  },
                },
              }),
              chain('plain', { filter_chain_match: { transport_protocol: 'raw_buffer' } }),
            ],
          },
          {
            name: 'mtls',
            address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
            filter_chains: [
              chain(
                'chain-mtls',
                serverTls(
                  m,
                  { require_client_certificate: true },
                  {
                    validation_context: {
                      trusted_ca: { filename: pki.ca.cert },
                      match_subject_alt_names: [{ prefix: 'spiffe://test/' }],
                    },
                  },
                ),
              ),
            ],
          },
        ],
      },
    };
    proxy = await startProxyProcess(bootstrap, ['--concurrency', '1']);
    sniPort = await proxy.listenerPort('sni');
    mtlsPort = await proxy.listenerPort('mtls');
  });

  after(async () => {
    await proxy?.stop();
    pki?.remove();
  });

  it('chooses the chain by SNI and serves its certificate, exact name and wildcard', async () => {
    assert.deepEqual(await httpsGet(sniPort, { servername: 'a.test', ca: ca() }), {
      status: 200,
      body: 'chain-a',
      cn: 'a.test',
    });
    assert.deepEqual(await httpsGet(sniPort, { servername: 'x.b.test', ca: ca() }), {
      status: 200,
      body: 'chain-b',
      cn: 'b.test',
    });
    const stats = await counters(proxy, /\.ssl\.handshake$/);
    assert.equal(stats.get('listener.ssl.handshake'), 2);
  });

  it('serves plain HTTP on the same port from the raw_buffer chain', async () => {
    const res = await fetch(`http://127.0.0.1:${sniPort}/`, { signal: AbortSignal.timeout(5000) });
    assert.equal(await res.text(), 'plain');
  });

  it('closes a TLS connection whose name matches no chain (no_filter_chain_match)', async () => {
    await assert.rejects(httpsGet(sniPort, { servername: 'c.test', ca: ca() }));
    const stats = await counters(proxy, /no_filter_chain_match$/);
    assert.ok((stats.get('listener.no_filter_chain_match') ?? 0) >= 1, JSON.stringify([...stats]));
  });

  it('speaks HTTP/2 when ALPN negotiates h2', async () => {
    const session = http2.connect(`https://127.0.0.1:${sniPort}`, { ca: ca(), servername: 'a.test' });
    try {
      const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = session.request({ ':path': '/' });
        let status = 0;
        let body = '';
        req.on('response', (h) => {
          status = Number(h[':status']);
        });
        req.on('data', (d: Buffer) => {
          body += d;
        });
        req.on('end', () => resolve({ status, body }));
        req.on('error', reject);
        req.setTimeout(5000, () => reject(new Error('timeout')));
      });
      assert.equal(session.alpnProtocol, 'h2');
      assert.deepEqual({ status, body }, { status: 200, body: 'chain-a' });
    } finally {
      session.close();
    }
  });

  it('requires a client certificate signed by trusted_ca with a matching SAN', async () => {
    const ok = await httpsGet(mtlsPort, {
      servername: 'mtls.test',
      ca: ca(),
      cert: client.certPem,
      key: client.keyPem,
    });
    assert.deepEqual(ok, { status: 200, body: 'chain-mtls', cn: 'mtls.test' });
    await assert.rejects(httpsGet(mtlsPort, { servername: 'mtls.test', ca: ca() }));
    const stranger = pki.otherCa('stranger');
    await assert.rejects(
      httpsGet(mtlsPort, { servername: 'mtls.test', ca: ca(), cert: stranger.certPem, key: stranger.keyPem }),
    );
    // Both listeners bind port 0 and so share the stat name listener.127.0.0.1_0.
    const stats = await counters(proxy, /^listener\..*\.ssl\.fail_verify_(no_cert|error)$/);
    assert.ok((stats.get('listener.ssl.fail_verify_no_cert') ?? 0) >= 1, JSON.stringify([...stats]));
    assert.ok((stats.get('listener.ssl.fail_verify_error') ?? 0) >= 1, JSON.stringify([...stats]));
  });

  it('counts every TLS connection closed once it ends (downstream_cx_active back to 0)', async () => {
    // A leaked connection never gets there; 5 s was too short for the last close in a loaded CI run.
    const deadline = Date.now() + 20_000;
    for (;;) {
      const active = await counters(proxy, /^listener\..*\.downstream_cx_active$/);
      if (active.get('listener.downstream_cx_active') === 0) break;
      assert.ok(Date.now() < deadline, JSON.stringify([...active]));
      await new Promise((r) => setTimeout(r, 50));
    }
  });

  it('refuses a client-initiated renegotiation (TLS 1.2), as the reference does', async () => {
    const socket = tls.connect({
      host: '127.0.0.1',
      port: sniPort,
      servername: 'a.test',
      ca: ca(),
      maxVersion: 'TLSv1.2',
    });
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('secureConnect', resolve);
        socket.once('error', reject);
      });
      const outcome = await new Promise<string>((resolve) => {
        const timer = setTimeout(() => resolve('no answer'), 5000);
        socket.once('error', (err) => {
          clearTimeout(timer);
          resolve(`error: ${err.message}`);
        });
        socket.once('close', () => {
          clearTimeout(timer);
          resolve('closed');
        });
        socket.renegotiate({}, (err) => {
          clearTimeout(timer);
          resolve(err ? `error: ${err.message}` : 'renegotiated');
        });
      });
      assert.notEqual(outcome, 'renegotiated');
      assert.notEqual(outcome, 'no answer');
    } finally {
      socket.destroy();
    }
  });
});
