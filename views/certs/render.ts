import { json, type ViewResult } from '../result.js';

/** One certificate as `/certs` shows it (already read and parsed by the caller). */
export interface CertificateDetails {
  path: string;
  /** Lower-case hex. */
  serialNumber: string;
  subjectAltNames: Array<{ dns: string } | { uri: string } | { ip_address: string }>;
  /** Milliseconds since the epoch. */
  validFrom: number;
  expiration: number;
}

/** The certificates of one TLS context: its CA bundle and its own chain. */
export interface TlsContextCertificates {
  caCert: CertificateDetails[];
  certChain: CertificateDetails[];
}

const DAY_MS = 86_400_000;

/** Whole seconds in RFC 3339, as a proto Timestamp without sub-second part prints. */
function seconds(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

function details(c: CertificateDetails, now: number) {
  return {
    path: c.path,
    serial_number: c.serialNumber,
    subject_alt_names: c.subjectAltNames,
    days_until_expiration: String(Math.max(0, Math.floor((c.expiration - now) / DAY_MS))),
    valid_from: seconds(c.validFrom),
    expiration_time: seconds(c.expiration),
  };
}

/** `/certs`: one entry per TLS context with `ca_cert` and `cert_chain`, every field printed. */
export function renderCerts(contexts: readonly TlsContextCertificates[], now: number): ViewResult {
  return json({
    certificates: contexts.map((c) => ({
      ca_cert: c.caCert.map((d) => details(d, now)),
      cert_chain: c.certChain.map((d) => details(d, now)),
    })),
  });
}
