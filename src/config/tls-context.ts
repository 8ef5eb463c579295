/**
 * The compile step of TLS contexts: `UpstreamTlsContext` (cluster `tls_context` or a TLS
 * `transport_socket`) and `DownstreamTlsContext` (filter chain) become node:tls options with
 * their certificates read (`tls-certificates.ts`), their `tls_params` (`tls-params.ts`) and
 * the peer checks node:tls does not do by itself (`tls-validation.ts`), the secrets they name
 * found statically or through SDS. Certificate files are read once per config: a changed file
 * takes effect with the next config that compiles it (see docs/tls.md).
 */
import { constants as cryptoConstants } from 'node:crypto';
import * as tls from 'node:tls';
import type { JsonObject } from '../../events/index.js';
import { durationMs, listOf, numberOr, objectOf, stringsOf } from '../../reducers/settings/values.js';
import { checkFields } from '../bootstrap/honoured.js';
import type { Report } from '../bootstrap/report.js';
import { compileConfigSource } from './config-source.js';
import { type CompiledSecret, compiledSecret, type SecretField } from './secret.js';
import type { Secrets } from './secrets.js';
import { type LoadedCertificate, loadCertificate } from './tls-certificates.js';
import {
  COMBINED_VALIDATION_FIELDS,
  COMMON_FIELDS,
  DOWNSTREAM_FIELDS,
  SDS_SECRET_FIELDS,
  UPSTREAM_FIELDS,
} from './tls-fields.js';
import { compileParams } from './tls-params.js';
import { compileValidation, type PeerCheck } from './tls-validation.js';

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

/** A secret a TLS context names, compiled. */
interface Found {
  /** The secret's message: the OpenSSL context is kept while the secrets it names are the same. */
  secret: JsonObject;
  value: CompiledSecret;
  /** Where the secret is, which its findings name: `static_resources.secrets['s']`, `secret 's' (SDS)`. */
  path: string;
}

/** A secret named by an `sds_config` and not discovered yet. */
interface Pending {
  pending: string;
}

const hasField = (value: CompiledSecret, field: SecretField): boolean =>
  (field === 'tls_certificate' ? value.certificate : value.validation) !== undefined;

/**
 * The compiled secret an `sds_secret_config` at `path` names for its `field`: a static one, or
 * with `sds_config` one from discovery (pending until it arrives; only the reference's form
 * is checked where there is no snapshot). Its findings under `field` go to `report` unless
 * `merged` (the caller compiles that field again, merged into a message of its own).
 * Undefined after reporting why not (no such static secret, no `field`).
 */
function secretOf(
  ref: JsonObject,
  path: string,
  report: Report,
  secrets: Secrets,
  field: SecretField,
  merged = false,
): Found | Pending | undefined {
  checkFields(ref, path, report, SDS_SECRET_FIELDS, 'SdsSecretConfig');
  const name = typeof ref.name === 'string' ? ref.name : '';
  if (name === '') {
    report.error(`${path}.name`, 'required field missing', 'missing');
    return undefined;
  }
  const discovered = ref.sds_config !== undefined;
  if (discovered) {
    compileConfigSource(objectOf(ref.sds_config), `${path}.sds_config`, report);
    if (!secrets.dynamic?.get(name)) return { pending: name };
  }
  const secret = discovered ? secrets.dynamic?.get(name) : secrets.static.get(name);
  if (!secret) {
    report.error(`${path}.name`, `no secret named '${name}' in static_resources.secrets`, 'unknown');
    return undefined;
  }
  const at = discovered ? `secret '${name}' (SDS)` : `static_resources.secrets['${name}']`;
  const value = compiledSecret(secret, field, at, merged ? null : report);
  if (hasField(value, field)) return { secret, value, path: at };
  report.error(`${path}.name`, `${discovered ? 'discovered ' : ''}secret '${name}' has no ${field}`);
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

const NO_PEER_CHECK: PeerCheck = { verifyChain: false, allowExpired: false, san: [], hashes: [], spki: [] };

/** Where a context's secrets go as they are named: those to wait for, and those found. */
interface Named {
  pending: string[];
  used: JsonObject[];
}

function note(found: Found | Pending | undefined, named: Named): Found | undefined {
  if (found && 'pending' in found) named.pending.push(found.pending);
  if (found && 'secret' in found) named.used.push(found.secret);
  return found && 'value' in found ? found : undefined;
}

/**
 * The peer checks of a CommonTlsContext's validation context, inline or from a secret, its CA
 * and CRL set in `secure`; null: none. A secret still to be discovered is noted pending.
 */
function validationOf(
  raw: JsonObject,
  path: string,
  report: Report,
  secrets: Secrets,
  named: Named,
  secure: tls.SecureContextOptions,
  caCerts: LoadedCertificate[],
): PeerCheck | null {
  const set = VALIDATION_CHOICES.filter((f) => raw[f] !== undefined);
  if (set.length > 1) report.error(`${path}.${set[1]}`, `only one of ${set.join(', ')} may be set`);
  if (raw.validation_context !== undefined)
    return compileValidation(
      objectOf(raw.validation_context),
      `${path}.validation_context`,
      report,
      secure,
      caCerts,
    );
  if (raw.validation_context_sds_secret_config !== undefined) {
    const at = `${path}.validation_context_sds_secret_config`;
    const ref = objectOf(raw.validation_context_sds_secret_config);
    const found = note(secretOf(ref, at, report, secrets, 'validation_context'), named);
    const validation = found?.value.validation;
    if (!validation) return NO_PEER_CHECK;
    Object.assign(secure, validation.secure);
    caCerts.push(...validation.caCerts);
    return validation.peer;
  }
  if (raw.combined_validation_context === undefined) return null;
  const at = `${path}.combined_validation_context`;
  const combined = objectOf(raw.combined_validation_context);
  checkFields(combined, at, report, COMBINED_VALIDATION_FIELDS, 'CombinedCertificateValidationContext');
  for (const field of Object.keys(COMBINED_VALIDATION_FIELDS))
    if (combined[field] === undefined) report.error(`${at}.${field}`, 'required field missing', 'missing');
  const ref = objectOf(combined.validation_context_sds_secret_config);
  const refAt = `${at}.validation_context_sds_secret_config`;
  const found = note(secretOf(ref, refAt, report, secrets, 'validation_context', true), named);
  const base = objectOf(combined.default_validation_context);
  const over = found?.value.validation?.message;
  return compileValidation(over ? mergeValidation(base, over) : base, at, report, secure, caCerts);
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
  const named: Named = { pending: [], used: [] };
  const fromSecrets = listOf(raw.tls_certificate_sds_secret_configs).map((ref, i) => {
    const at = `${path}.tls_certificate_sds_secret_configs[${i}]`;
    return note(secretOf(ref, at, report, secrets, 'tls_certificate'), named)?.value.certificate;
  });
  const inline = listOf(raw.tls_certificates).map((c, i) =>
    loadCertificate(c, `${path}.tls_certificates[${i}]`, report),
  );
  const loaded = [...inline, ...fromSecrets].filter((pair) => pair != null);
  for (const pair of loaded) if (pair.first) certChains.push(pair.first);
  if (loaded.length > 0) {
    secure.cert = loaded.map((pair) => pair.cert);
    secure.key = loaded.map((pair) => pair.key);
  }
  const peer = validationOf(raw, path, report, secrets, named, secure, caCerts);
  return {
    secure,
    alpn: stringsOf(raw.alpn_protocols),
    peer: peer ?? NO_PEER_CHECK,
    hasValidation: peer !== null,
    certChains,
    caCerts,
    pending: named.pending,
    secretsUsed: named.used,
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
