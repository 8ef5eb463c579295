/**
 * The compile step of TLS contexts: `UpstreamTlsContext` (cluster `tls_context` or a TLS
 * `transport_socket`) and `DownstreamTlsContext` (filter chain) become node:tls options with
 * their certificates read, plus the peer checks node:tls does not do by itself (SAN
 * matchers, pins). Certificate files are read once, here: a changed file takes effect with
 * the next config that compiles it (see docs/tls.md).
 */
import { constants as cryptoConstants, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as tls from 'node:tls';
import type { Json, JsonObject } from '../../events/index.js';
import { durationMs, listOf, numberOr, objectOf } from '../../reducers/settings/values.js';
import { inlineBytes } from '../bootstrap/data-source.js';
import { acting, checkFields, type FieldTable, notYet } from '../bootstrap/honoured.js';
import { attempt, type Report } from '../bootstrap/report.js';
import { compileConfigSource } from './config-source.js';
import { compileStringMatcher, type StringTest } from './matchers.js';
import type { Secrets } from './secrets.js';

/** A certificate the process loaded, as `/certs` and `days_until_first_cert_expiring` need it. */
export interface LoadedCertificate {
  /** The file name, or `<inline>`. */
  path: string;
  /** The first certificate of the PEM (the leaf of a chain, the first CA of a bundle). */
  cert: X509Certificate;
}

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

interface CommonTls {
  /** Options for `tls.createSecureContext` (certificates, CA, versions, ciphers, curves). */
  secure: tls.SecureContextOptions;
  alpn: string[];
  peer: PeerCheck;
  /** `validation_context` present: the downstream side asks for a client certificate. */
  hasValidation: boolean;
  certChains: LoadedCertificate[];
  caCerts: LoadedCertificate[];
  /**
   * Secrets named by an `sds_config` that discovery has not delivered yet: until they come,
   * no handshake is tried (`*_context_secrets_not_ready`, as the reference counts it).
   */
  pending: string[];
  /** The secret messages named (static or discovered): the OpenSSL context is kept while they are the same. */
  secretsUsed: JsonObject[];
}

export interface UpstreamTls extends CommonTls {
  context: tls.SecureContext;
  /** `sni`; null: none sent. */
  serverName: string | null;
  /** `max_session_keys` (default 1): TLS sessions kept for resumption; 0: none. */
  maxSessionKeys: number;
}

export interface DownstreamTls extends CommonTls {
  context: tls.SecureContext;
  requireClientCertificate: boolean;
  requireSni: boolean;
}

const UPSTREAM_FIELDS: FieldTable = {
  ...acting('common_tls_context', 'sni', 'allow_renegotiation', 'max_session_keys'),
};
const DOWNSTREAM_FIELDS: FieldTable = {
  ...acting('common_tls_context', 'require_client_certificate', 'require_sni', 'session_timeout'),
  ...acting('disable_stateless_session_resumption'),
  session_ticket_keys: notYet('session_ticket_keys (80-byte reference keys; Node takes 48)'),
  session_ticket_keys_sds_secret_config: notYet(
    'session_ticket_keys (80-byte reference keys; Node takes 48)',
  ),
};
const COMMON_FIELDS: FieldTable = {
  ...acting('tls_params', 'tls_certificates', 'alpn_protocols', 'validation_context'),
  ...acting('tls_certificate_sds_secret_configs', 'validation_context_sds_secret_config'),
  ...acting('combined_validation_context'),
};
/** A reference by name alone is a static secret; one with an `sds_config` is discovered from it. */
const SDS_SECRET_FIELDS: FieldTable = acting('name', 'sds_config');
const COMBINED_VALIDATION_FIELDS: FieldTable = acting(
  'default_validation_context',
  'validation_context_sds_secret_config',
);
const SECRET_FIELDS: FieldTable = {
  ...acting('name', 'tls_certificate', 'validation_context'),
  session_ticket_keys: notYet('session_ticket_keys (80-byte reference keys; Node takes 48)'),
  generic_secret: notYet('generic secrets'),
};
const PARAMS_FIELDS: FieldTable = acting(
  'tls_minimum_protocol_version',
  'tls_maximum_protocol_version',
  'cipher_suites',
  'ecdh_curves',
);
const CERTIFICATE_FIELDS: FieldTable = {
  ...acting('certificate_chain', 'private_key', 'password'),
  private_key_provider: notYet('private key providers'),
  ocsp_staple: notYet('OCSP stapling'),
  signed_certificate_timestamp: notYet('signed certificate timestamps'),
};
const VALIDATION_FIELDS: FieldTable = {
  ...acting('trusted_ca', 'verify_subject_alt_name', 'match_subject_alt_names', 'crl'),
  ...acting('verify_certificate_hash', 'verify_certificate_spki', 'allow_expired_certificate'),
  ...acting('trust_chain_verification'),
  require_ocsp_staple: notYet('OCSP stapling'),
  require_signed_certificate_timestamp: notYet('signed certificate timestamps'),
};
const DATA_SOURCE_FIELDS: FieldTable = acting('filename', 'inline_bytes', 'inline_string');

/** The field tables of the TLS messages, by the message name their findings use. */
export const FIELD_TABLES = {
  UpstreamTlsContext: UPSTREAM_FIELDS,
  DownstreamTlsContext: DOWNSTREAM_FIELDS,
  CommonTlsContext: COMMON_FIELDS,
  TlsParameters: PARAMS_FIELDS,
  TlsCertificate: CERTIFICATE_FIELDS,
  CertificateValidationContext: VALIDATION_FIELDS,
  DataSource: DATA_SOURCE_FIELDS,
  SdsSecretConfig: SDS_SECRET_FIELDS,
  CombinedCertificateValidationContext: COMBINED_VALIDATION_FIELDS,
  Secret: SECRET_FIELDS,
};

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
 * File reads by DataSource: one config is compiled by validation, by serve and by `/certs`,
 * and each would read its files again. Configs are frozen, so a file is read once per config
 * object; a new config (a reload, an xDS update) reads afresh.
 */
const fileReads = new WeakMap<JsonObject, { filename: string; bytes: Buffer }>();

/** A DataSource's bytes, or undefined after reporting why not. */
function readSource(
  raw: JsonObject,
  path: string,
  report: Report,
): { bytes: Buffer; path: string } | undefined {
  checkFields(raw, path, report, DATA_SOURCE_FIELDS, 'DataSource');
  if (typeof raw.filename === 'string') {
    try {
      let read = fileReads.get(raw);
      if (read?.filename !== raw.filename) {
        read = { filename: raw.filename, bytes: readFileSync(raw.filename) };
        fileReads.set(raw, read);
      }
      return { bytes: read.bytes, path: raw.filename };
    } catch (err) {
      report.error(
        `${path}.filename`,
        `cannot read '${raw.filename}': ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
      return undefined;
    }
  }
  const inline = inlineBytes(raw);
  if (inline !== undefined) return { bytes: inline, path: '<inline>' };
  report.error(path, 'needs one of filename, inline_string, inline_bytes', 'missing');
  return undefined;
}

/** The first certificate of a PEM source, for `/certs`; a source holding none is an error. */
function firstCertificate(
  bytes: Buffer,
  source: string,
  path: string,
  report: Report,
): LoadedCertificate | undefined {
  try {
    return { path: source, cert: new X509Certificate(bytes) };
  } catch (err) {
    report.error(path, `no certificate in '${source}': ${(err as Error).message}`);
    return undefined;
  }
}

function strings(value: Json | undefined): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
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
  const out: SanTest[] = strings(validation.verify_subject_alt_name).map(
    (want): SanTest =>
      (san) =>
        san.kind === 'DNS' ? dnsNameMatch(san.value, want) : san.value === want,
  );
  listOf(validation.match_subject_alt_names).forEach((m, i) => {
    const where = `${path}.match_subject_alt_names[${i}]`;
    const test = attempt<StringTest>(report, where, () => compileStringMatcher(m, where));
    if (!test) return;
    const exact = typeof m.exact === 'string' ? m.exact : null;
    out.push((san) =>
      san.kind === 'DNS' && exact !== null ? dnsNameMatch(san.value, exact) : test(san.value),
    );
  });
  return out;
}

function compileValidation(
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
      const first = firstCertificate(ca.bytes, ca.path, at, report);
      if (first) caCerts.push(first);
      verifyChain = validation.trust_chain_verification !== 'ACCEPT_UNTRUSTED';
    }
  }
  if (validation.crl !== undefined) {
    if (validation.trusted_ca === undefined) report.error(`${path}.crl`, 'needs trusted_ca');
    const crl = readSource(objectOf(validation.crl), `${path}.crl`, report);
    if (crl) secure.crl = crl.bytes;
  }
  const hashes = strings(validation.verify_certificate_hash).map((h) => h.replaceAll(':', '').toLowerCase());
  hashes.forEach((h, i) => {
    if (!/^[0-9a-f]{64}$/.test(h))
      report.error(
        `${path}.verify_certificate_hash[${i}]`,
        'is not a hex SHA-256 digest (64 hex digits, colons allowed)',
      );
  });
  const spki = strings(validation.verify_certificate_spki);
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

function compileParams(
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
  secure.ciphers = cipherList(strings(raw.cipher_suites), path, report);
  const curves = strings(raw.ecdh_curves);
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

/** A message of a secret, with the path its findings name. */
interface Found {
  config: JsonObject;
  path: string;
  /** The whole secret it comes from, if any. */
  secret?: JsonObject;
}

/** A secret named by an `sds_config` and not discovered yet. */
interface Pending {
  pending: string;
}

/**
 * The `field` of the secret an `sds_secret_config` at `path` names: a static one, or with
 * `sds_config` one from discovery (pending until it arrives; only the reference's form is
 * checked where there is no snapshot). Undefined after reporting why not (no such static
 * secret, no `field`).
 */
function secretOf(
  ref: JsonObject,
  path: string,
  report: Report,
  secrets: Secrets,
  field: string,
): Found | Pending | undefined {
  checkFields(ref, path, report, SDS_SECRET_FIELDS, 'SdsSecretConfig');
  const name = typeof ref.name === 'string' ? ref.name : '';
  if (name === '') {
    report.error(`${path}.name`, 'required field missing', 'missing');
    return undefined;
  }
  if (ref.sds_config !== undefined) {
    compileConfigSource(objectOf(ref.sds_config), `${path}.sds_config`, report);
    const secret = secrets.dynamic?.get(name);
    if (!secret) return { pending: name };
    if (secret[field] === undefined) {
      report.error(`${path}.name`, `discovered secret '${name}' has no ${field}`);
      return undefined;
    }
    return { config: objectOf(secret[field]), path: `secret '${name}' (SDS).${field}`, secret };
  }
  const secret = secrets.static.get(name);
  if (!secret)
    report.error(`${path}.name`, `no secret named '${name}' in static_resources.secrets`, 'unknown');
  else if (secret[field] === undefined) report.error(`${path}.name`, `secret '${name}' has no ${field}`);
  else
    return { config: objectOf(secret[field]), path: `static_resources.secrets['${name}'].${field}`, secret };
  return undefined;
}

/** The reference merges a combined context's secret over its default as protobuf's MergeFrom: lists append. */
function mergeValidation(base: JsonObject, over: JsonObject): JsonObject {
  const out: JsonObject = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    out[k] = Array.isArray(b) && Array.isArray(v) ? [...b, ...v] : v;
  }
  return out;
}

const VALIDATION_CHOICES = [
  'validation_context',
  'validation_context_sds_secret_config',
  'combined_validation_context',
];

/**
 * The validation context of a CommonTlsContext, inline or from a secret; null: none. A
 * secret still to be discovered is added to `pending`.
 */
function validationOf(
  raw: JsonObject,
  path: string,
  report: Report,
  secrets: Secrets,
  pending: string[],
  used: JsonObject[],
): Found | null {
  const set = VALIDATION_CHOICES.filter((f) => raw[f] !== undefined);
  if (set.length > 1) report.error(`${path}.${set[1]}`, `only one of ${set.join(', ')} may be set`);
  const named = (found: Found | Pending | undefined): Found | undefined => {
    if (found && 'pending' in found) pending.push(found.pending);
    if (found && 'secret' in found && found.secret) used.push(found.secret);
    return found && 'config' in found ? found : undefined;
  };
  if (raw.validation_context !== undefined)
    return { config: objectOf(raw.validation_context), path: `${path}.validation_context` };
  if (raw.validation_context_sds_secret_config !== undefined) {
    const at = `${path}.validation_context_sds_secret_config`;
    const ref = objectOf(raw.validation_context_sds_secret_config);
    return named(secretOf(ref, at, report, secrets, 'validation_context')) ?? { config: {}, path: at };
  }
  if (raw.combined_validation_context === undefined) return null;
  const at = `${path}.combined_validation_context`;
  const combined = objectOf(raw.combined_validation_context);
  checkFields(combined, at, report, COMBINED_VALIDATION_FIELDS, 'CombinedCertificateValidationContext');
  for (const field of Object.keys(COMBINED_VALIDATION_FIELDS))
    if (combined[field] === undefined) report.error(`${at}.${field}`, 'required field missing', 'missing');
  const ref = objectOf(combined.validation_context_sds_secret_config);
  const found = named(
    secretOf(ref, `${at}.validation_context_sds_secret_config`, report, secrets, 'validation_context'),
  );
  const base = objectOf(combined.default_validation_context);
  return { config: found ? mergeValidation(base, found.config) : base, path: at };
}

/** A `TlsCertificate`'s chain and key as node:tls takes them; undefined after reporting why not. */
function loadCertificate(
  c: JsonObject,
  at: string,
  report: Report,
): { cert: Buffer; key: { pem: Buffer; passphrase?: string }; first?: LoadedCertificate } | undefined {
  checkFields(c, at, report, CERTIFICATE_FIELDS, 'TlsCertificate');
  if (c.certificate_chain === undefined)
    report.error(`${at}.certificate_chain`, 'required field missing', 'missing');
  if (c.private_key === undefined) report.error(`${at}.private_key`, 'required field missing', 'missing');
  const chain =
    c.certificate_chain === undefined
      ? undefined
      : readSource(objectOf(c.certificate_chain), `${at}.certificate_chain`, report);
  const key =
    c.private_key === undefined
      ? undefined
      : readSource(objectOf(c.private_key), `${at}.private_key`, report);
  const password =
    c.password === undefined ? undefined : readSource(objectOf(c.password), `${at}.password`, report);
  if (!chain || !key) return undefined;
  const first = firstCertificate(chain.bytes, chain.path, `${at}.certificate_chain`, report);
  return {
    cert: chain.bytes,
    key: password ? { pem: key.bytes, passphrase: password.bytes.toString().trim() } : { pem: key.bytes },
    ...(first ? { first } : {}),
  };
}

function compileCommon(
  raw: JsonObject,
  path: string,
  report: Report,
  client: boolean,
  secrets: Secrets,
): CommonTls {
  checkFields(raw, path, report, COMMON_FIELDS, 'CommonTlsContext');
  const secure: tls.SecureContextOptions = {};
  const certChains: LoadedCertificate[] = [];
  const caCerts: LoadedCertificate[] = [];
  compileParams(objectOf(raw.tls_params), `${path}.tls_params`, report, secure, client);
  const certs: Buffer[] = [];
  const keys: Array<{ pem: Buffer; passphrase?: string }> = [];
  const inline = listOf(raw.tls_certificates).map((config, i) => ({
    config,
    path: `${path}.tls_certificates[${i}]`,
  }));
  const pending: string[] = [];
  const used: JsonObject[] = [];
  const named = listOf(raw.tls_certificate_sds_secret_configs).flatMap((ref, i) => {
    const at = `${path}.tls_certificate_sds_secret_configs[${i}]`;
    const found = secretOf(ref, at, report, secrets, 'tls_certificate');
    if (found && 'pending' in found) pending.push(found.pending);
    if (found && 'secret' in found && found.secret) used.push(found.secret);
    return found && 'config' in found ? [found] : [];
  });
  for (const { config: c, path: at } of [...inline, ...named]) {
    const loaded = loadCertificate(c, at, report);
    if (!loaded) continue;
    if (loaded.first) certChains.push(loaded.first);
    certs.push(loaded.cert);
    keys.push(loaded.key);
  }
  if (certs.length > 0) {
    secure.cert = certs;
    secure.key = keys;
  }
  const validation = validationOf(raw, path, report, secrets, pending, used);
  const peer = validation
    ? compileValidation(validation.config, validation.path, report, secure, caCerts)
    : { verifyChain: false, allowExpired: false, san: [], hashes: [], spki: [] };
  return {
    secure,
    alpn: strings(raw.alpn_protocols),
    peer,
    hasValidation: validation !== null,
    certChains,
    caCerts,
    pending,
    secretsUsed: used,
  };
}

/** What OpenSSL made of one TLS context's options: the context, or its refusal. */
type Built = { context: tls.SecureContext } | { refused: string };

/**
 * Built contexts by config, with the secret messages they were built from: one config is
 * compiled by validation, by serve's connect options or listener bind, and by `/certs`, and
 * each would have OpenSSL build the same context again. Configs and secrets are frozen and
 * their files read once (`readSource`), so a config builds once per content of its secrets;
 * a new config (a reload, an xDS update) or a rotated secret builds afresh.
 */
const built = new WeakMap<JsonObject, { used: readonly JsonObject[]; made: Built }>();

const sameList = (a: readonly object[], b: readonly object[]) =>
  a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * The secure context of the TLS config `raw`, turning OpenSSL's complaints (a key that does
 * not match its certificate) into a finding. A context already found invalid (`problems`
 * grew past `before`) is not tried: OpenSSL would only repeat the finding in its own words.
 */
function secureContext(
  raw: JsonObject,
  used: readonly JsonObject[],
  secure: tls.SecureContextOptions,
  path: string,
  report: Report,
  before: number,
): tls.SecureContext {
  if (report.problems.length > before) return tls.createSecureContext();
  const hit = built.get(raw);
  let made = hit && sameList(hit.used, used) ? hit.made : undefined;
  if (!made) {
    try {
      made = { context: tls.createSecureContext(secure) };
    } catch (err) {
      made = { refused: (err as Error).message };
    }
    built.set(raw, { used, made });
  }
  if ('context' in made) return made.context;
  report.error(path, `TLS context refused by OpenSSL: ${made.refused}`);
  return tls.createSecureContext();
}

/**
 * Compiles an `UpstreamTlsContext` found at `path` (a cluster's `tls_context`, or the
 * `typed_config` of its TLS `transport_socket`).
 */
export function compileUpstreamTls(
  raw: JsonObject,
  path: string,
  report: Report,
  secrets: Secrets,
): UpstreamTls {
  const before = report.problems.length;
  checkFields(raw, path, report, UPSTREAM_FIELDS, 'UpstreamTlsContext');
  const at = `${path}.common_tls_context`;
  const common = compileCommon(objectOf(raw.common_tls_context), at, report, true, secrets);
  const serverName = typeof raw.sni === 'string' && raw.sni !== '' ? raw.sni : null;
  // OpenSSL follows a server's renegotiation request; the reference refuses it unless asked.
  const secure =
    raw.allow_renegotiation === true
      ? common.secure
      : { ...common.secure, secureOptions: cryptoConstants.SSL_OP_NO_RENEGOTIATION };
  return {
    ...common,
    secure,
    context: secureContext(raw, common.secretsUsed, secure, at, report, before),
    serverName,
    maxSessionKeys: numberOr(raw.max_session_keys, 1),
  };
}

/** Compiles a filter chain's `DownstreamTlsContext` found at `path`. */
export function compileDownstreamTls(
  raw: JsonObject,
  path: string,
  report: Report,
  secrets: Secrets,
): DownstreamTls {
  const before = report.problems.length;
  checkFields(raw, path, report, DOWNSTREAM_FIELDS, 'DownstreamTlsContext');
  const at = `${path}.common_tls_context`;
  const common = compileCommon(objectOf(raw.common_tls_context), at, report, false, secrets);
  // A certificate that could not be read was reported already.
  const rawCommon = objectOf(raw.common_tls_context);
  if (
    listOf(rawCommon.tls_certificates).length +
      listOf(rawCommon.tls_certificate_sds_secret_configs).length ===
    0
  )
    report.error(`${at}.tls_certificates`, 'a server TLS context needs a certificate', 'missing');
  // The reference's servers never renegotiate; OpenSSL's would let a client ask (a DoS lever).
  const secure = {
    ...common.secure,
    secureOptions:
      cryptoConstants.SSL_OP_NO_RENEGOTIATION |
      (raw.disable_stateless_session_resumption === true ? cryptoConstants.SSL_OP_NO_TICKET : 0),
  };
  if (raw.session_timeout !== undefined)
    secure.sessionTimeout = Math.max(1, Math.round(durationMs(raw.session_timeout, 0) / 1000));
  return {
    ...common,
    secure,
    context: secureContext(raw, common.secretsUsed, secure, at, report, before),
    requireClientCertificate: raw.require_client_certificate === true,
    requireSni: raw.require_sni === true,
  };
}

/**
 * A secret from discovery, checked as the contexts naming it will load it (a certificate
 * whose key does not match, a validation context that does not compile): a bad one is
 * rejected (NACKed) and the last good one keeps serving.
 */
export function compileSecret(secret: JsonObject, path: string, report: Report): void {
  const before = report.problems.length;
  checkSecret(secret, path, report);
  const at = (field: string) => (path ? `${path}.${field}` : field);
  const secure: tls.SecureContextOptions = {};
  if (secret.tls_certificate !== undefined) {
    const loaded = loadCertificate(objectOf(secret.tls_certificate), at('tls_certificate'), report);
    if (loaded) {
      secure.cert = loaded.cert;
      secure.key = [loaded.key];
    }
  }
  if (secret.validation_context !== undefined)
    compileValidation(objectOf(secret.validation_context), at('validation_context'), report, secure, []);
  if (report.problems.length > before) return;
  try {
    tls.createSecureContext(secure);
  } catch (err) {
    report.error(path, `TLS context refused by OpenSSL: ${(err as Error).message}`);
  }
}

/** Checks the fields of a static secret at `path`; its contents compile where a TLS context names it. */
export function checkSecret(secret: JsonObject, path: string, report: Report): void {
  checkFields(secret, path, report, SECRET_FIELDS, 'Secret');
  if (typeof secret.name !== 'string' || secret.name === '')
    report.error(`${path}.name`, 'required field missing', 'missing');
}

/** `subjectAltName` (`DNS:a, IP Address:1.2.3.4, URI:x`) as typed entries. */
export interface SubjectAltName {
  kind: 'DNS' | 'URI' | 'IP';
  value: string;
}
