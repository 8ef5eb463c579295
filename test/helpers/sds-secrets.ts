/**
 * The secrets SDS tests push (as a management server, go-control-plane, or a watched file
 * sends them), the mesh cluster that names them, and what the proxy shows of the certificates
 * it holds.
 */
import type { JsonObject } from '../../events/index.js';
import { type Issued, x509 } from '../tls/certs.js';
import type { ProxyProcess } from './proxy-process.js';
import { staticCluster } from './xds-fixtures.js';

const ADS_V3 = { ads: {}, resource_api_version: 'V3' };

/** A `tls_certificate` secret holding `cert` and its key inline. */
export const certificateSecret = (name: string, cert: Issued): JsonObject => ({
  name,
  tls_certificate: {
    certificate_chain: { inline_string: cert.certPem },
    private_key: { inline_string: cert.keyPem },
  },
});

/** A `validation_context` secret trusting every CA of `bundle` (inline), with `extra` fields beside. */
export const trustSecret = (name: string, bundle: Issued[], extra: JsonObject = {}): JsonObject => ({
  name,
  validation_context: {
    trusted_ca: { inline_string: bundle.map((c) => c.certPem).join('') },
    ...extra,
  },
});

/**
 * The cluster Istio-like control planes push for an mTLS upstream (`backend` at 127.0.0.1:`port`,
 * SNI `backend.mesh`): its certificate `workload-cert` and its trust bundle `mesh-trust` both by
 * SDS over ADS, the bundle inside a combined validation context or (`combined` false) on its own.
 */
export function meshCluster(port: number, combined = false): JsonObject {
  const trust = { validation_context_sds_secret_config: { name: 'mesh-trust', sds_config: ADS_V3 } };
  return {
    ...staticCluster('backend', [port]),
    // A handshake on a loaded 2-core machine can take more than the fixture's 0.25 s.
    connect_timeout: '5s',
    transport_socket: {
      name: 'envoy.transport_sockets.tls',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext',
        sni: 'backend.mesh',
        common_tls_context: {
          tls_certificate_sds_secret_configs: [{ name: 'workload-cert', sds_config: ADS_V3 }],
          ...(combined
            ? { combined_validation_context: { default_validation_context: {}, ...trust } }
            : trust),
        },
      },
    },
  };
}

/** A certificate's serial as `/certs` and TLS peers show it: lowercase hex. */
export const serialOf = (cert: Issued): string =>
  x509(cert.cert, ['-serial'])
    .replace(/^serial=/, '')
    .toLowerCase();

/** `serial_number` of every certificate `/certs` lists. */
export async function certSerials(proxy: ProxyProcess): Promise<string[]> {
  const certs = JSON.parse((await proxy.get('/certs')).body) as {
    certificates: Array<{
      cert_chain: Array<{ serial_number: string }>;
      ca_cert: Array<{ serial_number: string }>;
    }>;
  };
  return certs.certificates.flatMap((c) => [...c.cert_chain, ...c.ca_cert].map((x) => x.serial_number));
}
