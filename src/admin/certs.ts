import type { CertificateDetails, TlsContextCertificates } from '../../views/certs/render.js';
import type { LoadedCertificate } from '../config/tls-certificates.js';
import { loadedContexts } from '../config/tls-loaded.js';
import { subjectAltNames } from '../tls/peer-check.js';

function details(loaded: LoadedCertificate): CertificateDetails {
  const cert = loaded.cert;
  return {
    path: loaded.path,
    serialNumber: cert.serialNumber.toLowerCase(),
    subjectAltNames: subjectAltNames(cert).map((san) =>
      san.kind === 'DNS'
        ? { dns: san.value }
        : san.kind === 'URI'
          ? { uri: san.value }
          : { ip_address: san.value },
    ),
    validFrom: Date.parse(cert.validFrom),
    expiration: Date.parse(cert.validTo),
  };
}

/**
 * The certificates of every TLS context the snapshot's clusters and listeners hold (static
 * and discovered alike): each context's CA (`trusted_ca`, first certificate) and chains
 * (`tls_certificates`, leaf of each). What cannot be read is reported through `onError`
 * and left out.
 */
export function loadedCertificates(
  state: Parameters<typeof loadedContexts>[0],
  onError: (message: string) => void,
): TlsContextCertificates[] {
  const { contexts, errors } = loadedContexts(state);
  for (const e of errors) onError(e);
  return contexts.map((c) => ({ caCert: c.caCerts.map(details), certChain: c.certChains.map(details) }));
}
