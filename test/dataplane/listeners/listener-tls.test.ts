/**
 * Root cause: a TLS chain with `alpn_protocols` handed its connections to a Node TLS server
 * given those protocols, and Node answers a ClientHello whose ALPN list shares none of them
 * with a fatal `no_application_protocol` alert (its ALPN callback can do nothing else). The
 * reference's selection goes on without ALPN (BoringSSL's NOACK), and the HTTP codec picks
 * the protocol from the first bytes. Such a client is now handshaken by a server of the same
 * context offering no ALPN, chosen from the hello: peeked here, or by a chain match on SNI.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as tls from 'node:tls';
import type { JsonObject } from '../../../events/index.js';
import { hcmFilterV3 } from '../../helpers/bootstraps.js';
import { type ProxyProcess, startProxyProcess } from '../../helpers/proxy-process.js';
import { type Issued, makePki } from '../../tls/certs.js';

function tlsChain(cert: Issued, match: JsonObject): JsonObject {
  return {
    filter_chain_match: match,
    transport_socket: {
      name: 'envoy.transport_sockets.tls',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext',
        common_tls_context: {
          alpn_protocols: ['h2', 'http/1.1'],
          tls_certificates: [
            { certificate_chain: { filename: cert.cert }, private_key: { filename: cert.key } },
          ],
        },
      },
    },
    filters: [
      hcmFilterV3('alpn', {
        route_config: {
          virtual_hosts: [
            {
              name: 'all',
              domains: ['*'],
              routes: [
                { match: { prefix: '/' }, direct_response: { status: 200, body: { inline_string: 'hi' } } },
              ],
            },
          ],
        },
        http_filters: [{ name: 'envoy.filters.http.router' }],
      }),
    ],
  };
}

function listener(name: string, chain: JsonObject): JsonObject {
  return {
    name,
    address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
    filter_chains: [chain],
  };
}

/** A TLS client offering `alpn`: the protocol agreed (false for none) and the answer to an HTTP/1.1 GET. */
function get(
  port: number,
  alpn: string[],
  servername: string,
): Promise<{ agreed: string | false | null; answer: string }> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({
      host: '127.0.0.1',
      port,
      servername,
      rejectUnauthorized: false,
      ALPNProtocols: alpn,
    });
    let answer = '';
    socket.setTimeout(10_000, () => socket.destroy(new Error('timeout')));
    socket.on('secureConnect', () => socket.write('GET / HTTP/1.1\r\nhost: a\r\nconnection: close\r\n\r\n'));
    socket.on('data', (d: Buffer) => {
      answer += d.toString('latin1');
    });
    socket.on('end', () => resolve({ agreed: socket.alpnProtocol, answer }));
    socket.on('error', reject);
  });
}

describe('a TLS client offering only protocols the listener does not', () => {
  let proxy: ProxyProcess;
  let plain: number;
  let bySni: number;

  before(async () => {
    const pki = makePki();
    const cert = pki.leaf('alpn.test', ['DNS:alpn.test']);
    proxy = await startProxyProcess(
      {
        admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
        static_resources: {
          listeners: [
            listener('alpn', tlsChain(cert, {})),
            listener('sni', tlsChain(cert, { server_names: ['alpn.test'] })),
          ],
        },
      },
      ['--concurrency', '2'],
    );
    plain = await proxy.listenerPort('alpn');
    bySni = await proxy.listenerPort('sni');
  });

  after(async () => {
    await proxy?.stop();
  });

  for (const which of ['no chain match on the hello', 'a chain matched on SNI'])
    it(`${which}: the handshake goes on without ALPN and HTTP/1.1 is served`, async () => {
      const port = which.startsWith('no') ? plain : bySni;
      for (let i = 0; i < 4; i++) {
        const foreign = await get(port, ['spdy/3', 'foo'], 'alpn.test');
        assert.equal(foreign.agreed, false);
        assert.match(foreign.answer, /^HTTP\/1\.1 200 /);
        assert.ok(foreign.answer.endsWith('hi'));
      }
      assert.equal((await get(port, ['foo', 'http/1.1'], 'alpn.test')).agreed, 'http/1.1');
      assert.equal((await get(port, ['h2', 'http/1.1'], 'alpn.test')).agreed, 'h2');
      const none = await get(port, [], 'alpn.test');
      assert.equal(none.agreed, false);
      assert.match(none.answer, /^HTTP\/1\.1 200 /);
    });
});
