/**
 * `TlsParameters` as node:tls options: protocol versions, cipher suites and curves, with the
 * reference's defaults (clients TLS 1.2, servers 1.0 to 1.3; its cipher list and curves), each
 * name checked against what this build's OpenSSL offers.
 */
import * as tls from 'node:tls';
import type { JsonObject } from '../../events/index.js';
import { stringsOf } from '../../reducers/settings/values.js';
import { checkFields } from '../bootstrap/honoured.js';
import type { Report } from '../bootstrap/report.js';
import { PARAMS_FIELDS } from './tls-fields.js';

/** `TlsParameters.TlsProtocol` as node:tls names it. */
const VERSIONS: Record<string, tls.SecureVersion> = {
  TLSv1_0: 'TLSv1',
  TLSv1_1: 'TLSv1.1',
  TLSv1_2: 'TLSv1.2',
  TLSv1_3: 'TLSv1.3',
};

const VERSION_ORDER: tls.SecureVersion[] = ['TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'];

/**
 * `cipher_suites` speaks of TLS 1.0-1.2 only; node:tls drops TLS 1.3 when its cipher list
 * names no 1.3 suite, so the defaults are appended to keep 1.3 as the reference does.
 */
const TLS13_SUITES = ['TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256', 'TLS_AES_128_GCM_SHA256'];

/**
 * The reference's cipher list when `cipher_suites` is empty (its non-FIPS server default,
 * which its clients used too in v2): ECDHE first, AES-GCM and ChaCha20 before CBC.
 */
const REFERENCE_CIPHERS = [
  '[ECDHE-ECDSA-AES128-GCM-SHA256|ECDHE-ECDSA-CHACHA20-POLY1305]',
  '[ECDHE-RSA-AES128-GCM-SHA256|ECDHE-RSA-CHACHA20-POLY1305]',
  'ECDHE-ECDSA-AES128-SHA',
  'ECDHE-RSA-AES128-SHA',
  'AES128-GCM-SHA256',
  'AES128-SHA',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-AES256-SHA',
  'ECDHE-RSA-AES256-SHA',
  'AES256-GCM-SHA384',
  'AES256-SHA',
];
/** The reference's default `ecdh_curves`. */
const REFERENCE_CURVES = ['X25519', 'P-256'];

/** `cipher_suites` (or the reference's list) as a node:tls cipher list; each name must be one this OpenSSL has. */
function cipherList(configured: string[], path: string, report: Report): string {
  const names = configured.length > 0 ? configured : REFERENCE_CIPHERS;
  const known = new Set(tls.getCiphers());
  const out: string[] = [];
  names.forEach((entry, i) => {
    // `[A|B]` is an equal-preference group of the reference's BoringSSL; OpenSSL has no
    // such groups, so its members keep their written order.
    const members = entry.startsWith('[') && entry.endsWith(']') ? entry.slice(1, -1).split('|') : [entry];
    for (const name of members) {
      if (known.has(name.toLowerCase())) out.push(name);
      else
        report.error(
          `${path}.cipher_suites[${i}]`,
          `'${name}' is not a cipher suite this build can offer (OpenSSL ${process.versions.openssl}); see docs/tls.md`,
        );
    }
  });
  return [...out, ...TLS13_SUITES].join(':');
}

export function compileParams(
  raw: JsonObject,
  path: string,
  report: Report,
  secure: tls.SecureContextOptions,
  client: boolean,
): void {
  checkFields(raw, path, report, PARAMS_FIELDS, 'TlsParameters');
  const version = (field: string, fallback: tls.SecureVersion): tls.SecureVersion => {
    const v = raw[field];
    if (v === undefined || v === 'TLS_AUTO') return fallback;
    const mapped = VERSIONS[String(v)];
    if (!mapped) report.error(`${path}.${field}`, `'${String(v)}' is not a TLS version`);
    return mapped ?? fallback;
  };
  // The reference's defaults: clients TLS 1.2 only, servers TLS 1.0 to 1.3.
  secure.minVersion = version('tls_minimum_protocol_version', client ? 'TLSv1.2' : 'TLSv1');
  secure.maxVersion = version('tls_maximum_protocol_version', client ? 'TLSv1.2' : 'TLSv1.3');
  if (VERSION_ORDER.indexOf(secure.minVersion) > VERSION_ORDER.indexOf(secure.maxVersion))
    report.error(
      path,
      `tls_minimum_protocol_version (${secure.minVersion}) is above tls_maximum_protocol_version (${secure.maxVersion})`,
    );
  secure.ciphers = cipherList(stringsOf(raw.cipher_suites), path, report);
  const curves = stringsOf(raw.ecdh_curves);
  curves.forEach((curve, i) => {
    try {
      tls.createSecureContext({ ecdhCurve: curve });
    } catch {
      report.error(
        `${path}.ecdh_curves[${i}]`,
        `'${curve}' is not a curve this build can offer (OpenSSL ${process.versions.openssl})`,
      );
    }
  });
  secure.ecdhCurve = (curves.length > 0 ? curves : REFERENCE_CURVES).join(':');
}
