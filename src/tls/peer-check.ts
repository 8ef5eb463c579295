/**
 * The peer checks of a finished handshake that node:tls does not do by itself (SAN matchers,
 * pins), run with what the TLS context's compile step made (src/config/tls-validation.ts).
 */
import { createHash, type X509Certificate } from 'node:crypto';
import type * as tls from 'node:tls';
import type { PeerCheck, PeerFailure, SubjectAltName } from '../config/tls-validation.js';

/** `subjectAltName` (`DNS:a, IP Address:1.2.3.4, URI:x, email:y`) as typed entries. */
export function subjectAltNames(cert: X509Certificate): SubjectAltName[] {
  return (cert.subjectAltName ?? '')
    .split(', ')
    .filter(Boolean)
    .flatMap((entry): SubjectAltName[] => {
      const colon = entry.indexOf(':');
      const kind = entry.slice(0, colon);
      const value = entry.slice(colon + 1);
      if (kind === 'DNS') return [{ kind: 'DNS', value }];
      if (kind === 'URI') return [{ kind: 'URI', value }];
      if (kind === 'IP Address') return [{ kind: 'IP', value }];
      if (kind === 'email') return [{ kind: 'EMAIL', value }];
      return [];
    });
}

/**
 * Checks the peer of a finished handshake against a context's validation rules, as the
 * reference orders them: chain, then SAN, then pins. Null when the peer passes.
 */
export function checkPeer(socket: tls.TLSSocket, check: PeerCheck, required: boolean): PeerFailure | null {
  const cert = socket.getPeerX509Certificate();
  if (!cert) return required ? 'fail_verify_no_cert' : null;
  if (check.verifyChain && !socket.authorized) {
    const expiredOnly = String(socket.authorizationError) === 'CERT_HAS_EXPIRED';
    if (!(expiredOnly && check.allowExpired)) return 'fail_verify_error';
  }
  if (check.san.length > 0) {
    const names = subjectAltNames(cert);
    if (!check.san.some((test) => names.some(test))) return 'fail_verify_san';
  }
  if (check.hashes.length > 0 || check.spki.length > 0) {
    const hash = cert.fingerprint256.replaceAll(':', '').toLowerCase();
    const spki = spkiDigest(cert);
    if (!check.hashes.includes(hash) && !check.spki.includes(spki)) return 'fail_verify_cert_hash';
  }
  return null;
}

function spkiDigest(cert: X509Certificate): string {
  const der = cert.publicKey.export({ type: 'spki', format: 'der' });
  return createHash('sha256').update(der).digest('base64');
}
