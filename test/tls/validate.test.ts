/** `--mode validate` compiles TLS contexts: what cannot be honoured is refused naming the field. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { socketHelper } from '../../src/dataplane/listeners/native.js';
import { runCli } from '../helpers/bootstrap.js';
import { makePki, type TestPki } from './certs.js';

const ENDPOINT = `{ endpoint: { address: { socket_address: { address: 127.0.0.1, port_value: 443 } } } }`;

function clusterWith(tls: string): string {
  return `static_resources: { clusters: [{ name: t, load_assignment: { cluster_name: t, endpoints: [{ lb_endpoints: [${ENDPOINT}] }] }, ${tls} }] }`;
}

function validate(yaml: string) {
  return runCli(['--mode', 'validate', '--config-yaml', yaml]);
}

describe('TLS contexts at validate', () => {
  let pki: TestPki;
  before(() => {
    pki = makePki();
  });
  after(() => pki.remove());

  it('accepts a cluster tls_context and a TLS transport_socket with files that exist', async () => {
    const leaf = pki.leaf('client', ['DNS:client.test']);
    const common = `common_tls_context: { tls_params: { tls_minimum_protocol_version: TLSv1_2, cipher_suites: ['[ECDHE-ECDSA-AES128-GCM-SHA256|ECDHE-ECDSA-CHACHA20-POLY1305]', ECDHE-RSA-AES256-GCM-SHA384] }, tls_certificates: [{ certificate_chain: { filename: '${leaf.cert}' }, private_key: { filename: '${leaf.key}' } }], validation_context: { trusted_ca: { filename: '${pki.ca.cert}' } } }`;
    for (const tls of [
      `tls_context: { sni: a.test, ${common} }`,
      `transport_socket: { name: proxy.transport_sockets.tls, typed_config: { '@type': type.googleapis.com/envoy.api.v2.auth.UpstreamTlsContext, ${common} } }`,
    ]) {
      const out = await validate(clusterWith(tls));
      assert.equal(out.status, 0, out.stderr);
    }
  });

  it('refuses a certificate file that does not exist, naming the field', async () => {
    const out = await validate(
      clusterWith(
        `tls_context: { common_tls_context: { validation_context: { trusted_ca: { filename: /nonexistent/ca.pem } } } }`,
      ),
    );
    assert.equal(out.status, 1);
    assert.match(
      out.stderr,
      /clusters\[0\]\.tls_context\.common_tls_context\.validation_context\.trusted_ca\.filename: cannot read '\/nonexistent\/ca\.pem': ENOENT/,
    );
  });

  it('refuses a cipher suite this build cannot offer, naming the entry', async () => {
    const out = await validate(
      clusterWith(
        `tls_context: { common_tls_context: { tls_params: { cipher_suites: [ECDHE-RSA-AES128-GCM-SHA256, NOT-A-CIPHER] } } }`,
      ),
    );
    assert.equal(out.status, 1);
    assert.match(out.stderr, /tls_params\.cipher_suites\[1\]: 'NOT-A-CIPHER' is not a cipher suite/);
    assert.doesNotMatch(out.stderr, /cipher_suites\[0\]/);
  });

  it('refuses a private key that does not belong to its certificate', async () => {
    const a = pki.leaf('a', []);
    const b = pki.leaf('b', []);
    const out = await validate(
      clusterWith(
        `tls_context: { common_tls_context: { tls_certificates: [{ certificate_chain: { filename: '${a.cert}' }, private_key: { filename: '${b.key}' } }] } }`,
      ),
    );
    assert.equal(out.status, 1);
    assert.match(out.stderr, /tls_context\.common_tls_context: TLS context refused by OpenSSL/);
  });

  it('an SDS secret over ADS needs ads_config, and is accepted with it', async () => {
    const out = await validate(
      clusterWith(
        `tls_context: { common_tls_context: { tls_certificate_sds_secret_configs: [{ name: s, sds_config: { ads: {} } }] } }`,
      ),
    );
    assert.equal(out.status, 1);
    assert.match(
      out.stderr,
      /common_tls_context\.tls_certificate_sds_secret_configs\[0\]\.sds_config\.ads: ads needs dynamic_resources\.ads_config/,
    );
    // TLS to the management server acts; one whose secrets it serves itself never dials (as the reference).
    const ads = `dynamic_resources: { ads_config: { api_type: GRPC, grpc_services: [{ envoy_grpc: { cluster_name: xds } }] } }`;
    const tls = `tls_context: { common_tls_context: { tls_certificate_sds_secret_configs: [{ name: s, sds_config: { ads: {} } }] } }`;
    const clusters = `static_resources: { clusters: [{ name: t, load_assignment: { cluster_name: t, endpoints: [{ lb_endpoints: [${ENDPOINT}] }] }, ${tls} }, { name: xds, load_assignment: { cluster_name: xds, endpoints: [{ lb_endpoints: [${ENDPOINT}] }] } }] }`;
    const accepted = await validate(`{ ${clusters}, ${ads} }`);
    assert.equal(accepted.status, 0, accepted.stderr);
    const selfServed = `dynamic_resources: { ads_config: { api_type: GRPC, grpc_services: [{ envoy_grpc: { cluster_name: t } }] } }`;
    const selfServing = await validate(`{ ${clusterWith(tls)}, ${selfServed} }`);
    assert.equal(selfServing.status, 0, selfServing.stderr);
  });

  it('accepts the TLS inspector and original_dst listener filters by every name, and refuses one this build lacks by name', async () => {
    const leaf = pki.leaf('srv', ['DNS:srv.test']);
    const listener = (filters: string) =>
      `static_resources: { listeners: [{ name: l, address: { socket_address: { address: 127.0.0.1, port_value: 0 } }, listener_filters: [${filters}], filter_chains: [{ filter_chain_match: { server_names: [srv.test] }, tls_context: { common_tls_context: { tls_certificates: [{ certificate_chain: { filename: '${leaf.cert}' }, private_key: { filename: '${leaf.key}' } }] } }, filters: [{ name: envoy.tcp_proxy, typed_config: { '@type': type.googleapis.com/envoy.config.filter.network.tcp_proxy.v2.TcpProxy, stat_prefix: t, cluster: c } }] }] }], clusters: [{ name: c, load_assignment: { cluster_name: c, endpoints: [{ lb_endpoints: [${ENDPOINT}] }] } }] }`;
    for (const f of [
      '{ name: envoy.listener.tls_inspector, typed_config: {} }',
      '{ name: proxy.filters.listener.tls_inspector }',
    ]) {
      const out = await validate(listener(f));
      assert.equal(out.status, 0, out.stderr);
    }
    // Served by the native socket helper: refused naming the filter where it is not built.
    const native = typeof socketHelper() !== 'string';
    for (const f of [
      '{ name: envoy.listener.original_dst }',
      '{ name: proxy.filters.listener.original_dst }',
      "{ name: x, typed_config: { '@type': type.googleapis.com/envoy.extensions.filters.listener.original_dst.v3.OriginalDst } }",
      "{ name: x, typed_config: { '@type': type.googleapis.com/envoy.config.filter.listener.original_dst.v2.OriginalDst } }",
    ]) {
      const out = await validate(listener(f));
      if (native) assert.equal(out.status, 0, out.stderr);
      else assert.match(out.stderr, /listener_filters\[0\]\.name: needs the native socket helper/);
    }
    const out = await validate(listener('{ name: envoy.filters.listener.proxy_protocol }'));
    assert.equal(out.status, 1);
    assert.match(
      out.stderr,
      /listeners\[0\]\.listener_filters\[0\]\.name: unknown extension 'envoy\.filters\.listener\.proxy_protocol'/,
    );
  });

  it('refuses a curve OpenSSL does not know and versions in the wrong order, naming the field', async () => {
    const out = await validate(
      clusterWith(
        `tls_context: { common_tls_context: { tls_params: { ecdh_curves: [X25519, NO-SUCH-CURVE], tls_minimum_protocol_version: TLSv1_3, tls_maximum_protocol_version: TLSv1_2 } } }`,
      ),
    );
    assert.equal(out.status, 1);
    assert.match(out.stderr, /tls_params\.ecdh_curves\[1\]: 'NO-SUCH-CURVE' is not a curve/);
    assert.doesNotMatch(out.stderr, /ecdh_curves\[0\]/);
    assert.doesNotMatch(out.stderr, /refused by OpenSSL/);
    assert.match(
      out.stderr,
      /tls_params: tls_minimum_protocol_version \(TLSv1\.3\) is above tls_maximum_protocol_version \(TLSv1\.2\)/,
    );
  });

  it('refuses tls_context and transport_socket together', async () => {
    const out = await validate(
      clusterWith(
        `tls_context: { sni: a.test }, transport_socket: { name: tls, typed_config: { '@type': type.googleapis.com/envoy.api.v2.auth.UpstreamTlsContext } }`,
      ),
    );
    assert.equal(out.status, 1);
    assert.match(
      out.stderr,
      /clusters\[0\]\.tls_context: only one of tls_context and transport_socket may be set/,
    );
  });
});
