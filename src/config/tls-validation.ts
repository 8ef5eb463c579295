/**
 * A `CertificateValidationContext` compiled into the checks a finished handshake's peer must
 * pass (run by src/tls/peer-check.ts): trusted CA and CRL as node:tls options, SAN matchers
 * that match DNS names as the reference does, certificate hash and SPKI pins checked for shape.
 */
import type * as tls from 'node:tls';
import type { JsonObject } from '../../events/index.js';
import { listOf, objectOf, stringsOf } from '../../reducers/settings/values.js';
import { checkFields } from '../bootstrap/honoured.js';
import { attempt, type Report } from '../bootstrap/report.js';
import { compileStringMatcher, type StringTest } from './matchers.js';
import { caBundle, type LoadedCertificate, readSource } from './tls-certificates.js';
import { SAN_MATCHER_FIELDS, VALIDATION_FIELDS } from './tls-fields.js';

/** What is checked on the peer's certificate after the handshake. */
export interface PeerCheck {
  /** `trusted_ca` is set: the chain must verify against it. */
  verifyChain: boolean;
  allowExpired: boolean;
  /** SAN matchers (`verify_subject_alt_name`, `match_subject_alt_names`); empty: no SAN check. */
  san: SanTest[];
  /** Lower-case hex SHA-256 of the DER certificate, no colons. */
  hashes: string[];
  /** Base64 SHA-256 of the DER SubjectPublicKeyInfo. */
  spki: string[];
}

/** Why a peer certificate was refused, named as the reference's `ssl.` counter. */
export type PeerFailure =
  | 'fail_verify_error'
  | 'fail_verify_san'
  | 'fail_verify_cert_hash'
  | 'fail_verify_no_cert';

type SanTest = (san: SubjectAltName) => boolean;

/** `subjectAltName` (`DNS:a, IP Address:1.2.3.4, URI:x`) as typed entries. */
export interface SubjectAltName {
  kind: 'DNS' | 'URI' | 'IP' | 'EMAIL';
  value: string;
}

/** `*.example.com` covers exactly one label more than `example.com`, as the reference's DNS match. */
function dnsNameMatch(pattern: string, name: string): boolean {
  const p = pattern.toLowerCase();
  const n = name.toLowerCase();
  if (p === n) return true;
  if (!p.startsWith('*.')) return false;
  const dot = n.indexOf('.');
  return dot > 0 && n.slice(dot) === p.slice(1);
}

function compileSan(validation: JsonObject, path: string, report: Report): SanTest[] {
  const out: SanTest[] = stringsOf(validation.verify_subject_alt_name).map(
    (want): SanTest =>
      (san) =>
        san.kind === 'DNS' ? dnsNameMatch(san.value, want) : san.value === want,
  );
  listOf(validation.match_subject_alt_names).forEach((m, i) => {
    const test = sanMatcher(m, `${path}.match_subject_alt_names[${i}]`, report);
    if (test) out.push(test);
  });
  listOf(validation.match_typed_subject_alt_names).forEach((m, i) => {
    const where = `${path}.match_typed_subject_alt_names[${i}]`;
    checkFields(m, where, report, SAN_MATCHER_FIELDS, 'SubjectAltNameMatcher');
    const kind = TYPED_SAN_KINDS[String(m.san_type)];
    if (m.san_type === 'OTHER_NAME')
      report.unsupported(`${where}.san_type`, 'OTHER_NAME SANs are not implemented');
    else if (kind === undefined) report.error(`${where}.san_type`, 'must be EMAIL, DNS, URI or IP_ADDRESS');
    if (m.matcher === undefined) report.error(`${where}.matcher`, 'required field missing', 'missing');
    const test = sanMatcher(objectOf(m.matcher), `${where}.matcher`, report);
    if (test && kind) out.push((san) => san.kind === kind && test(san));
  });
  return out;
}

/** v3's SAN types, as the kinds `subjectAltNames` (src/tls/peer-check.ts) reads from a certificate. */
const TYPED_SAN_KINDS: Record<string, SubjectAltName['kind']> = {
  EMAIL: 'EMAIL',
  DNS: 'DNS',
  URI: 'URI',
  IP_ADDRESS: 'IP',
};

/** A `StringMatcher` over a SAN's value; an `exact` one matches a DNS SAN's wildcard as the reference. */
function sanMatcher(m: JsonObject, where: string, report: Report): SanTest | undefined {
  const test = attempt<StringTest>(report, where, () => compileStringMatcher(m, where));
  if (!test) return undefined;
  const exact = typeof m.exact === 'string' ? m.exact : null;
  return (san) => (san.kind === 'DNS' && exact !== null ? dnsNameMatch(san.value, exact) : test(san.value));
}

export function compileValidation(
  validation: JsonObject,
  path: string,
  report: Report,
  secure: tls.SecureContextOptions,
  caCerts: LoadedCertificate[],
): PeerCheck {
  checkFields(validation, path, report, VALIDATION_FIELDS, 'CertificateValidationContext');
  let verifyChain = false;
  if (validation.trusted_ca !== undefined) {
    const at = `${path}.trusted_ca`;
    const ca = readSource(objectOf(validation.trusted_ca), at, report);
    if (ca) {
      secure.ca = ca.bytes;
      const first = caBundle(ca.bytes, ca.path, at, report);
      if (first) caCerts.push(first);
      verifyChain = validation.trust_chain_verification !== 'ACCEPT_UNTRUSTED';
    }
  }
  if (validation.crl !== undefined) {
    if (validation.trusted_ca === undefined) report.error(`${path}.crl`, 'needs trusted_ca');
    const crl = readSource(objectOf(validation.crl), `${path}.crl`, report);
    if (crl) secure.crl = crl.bytes;
  }
  const hashes = stringsOf(validation.verify_certificate_hash).map((h) =>
    h.replaceAll(':', '').toLowerCase(),
  );
  hashes.forEach((h, i) => {
    if (!/^[0-9a-f]{64}$/.test(h))
      report.error(
        `${path}.verify_certificate_hash[${i}]`,
        'is not a hex SHA-256 digest (64 hex digits, colons allowed)',
      );
  });
  const spki = stringsOf(validation.verify_certificate_spki);
  spki.forEach((s, i) => {
    if (Buffer.from(s, 'base64').length !== 32)
      report.error(`${path}.verify_certificate_spki[${i}]`, 'is not a base64 SHA-256 digest');
  });
  return {
    verifyChain,
    allowExpired: validation.allow_expired_certificate === true,
    san: compileSan(validation, path, report),
    hashes,
    spki,
  };
}
