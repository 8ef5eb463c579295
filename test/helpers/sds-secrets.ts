/**
 * The secrets SDS tests push (as a management server, go-control-plane, or a watched file
 * sends them) and what the proxy shows of the certificates it holds.
 */
import type { JsonObject } from '../../events/index.js';
import { type Issued, x509 } from '../tls/certs.js';
import type { ProxyProcess } from './proxy-process.js';

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
