/**
 * The Secret's one compile step, for a static secret (`static_resources.secrets`) and one from
 * SDS alike: its `tls_certificate` (chain and key read from their data sources) and its
 * `validation_context` (CA, CRL, the peer checks), checked as the contexts naming it will load
 * them. The value and its findings are kept by the secret's identity, so a TLS context naming
 * the secret (tls-context.ts) reads the value discovery compiled, never the secret's JSON again;
 * a copy (a worker's snapshot, a replay) or a static secret compiles once, when first named.
 */
import * as tls from 'node:tls';
import type { JsonObject } from '../../events/index.js';
import { objectOf } from '../../reducers/settings/values.js';
import { checkFields } from '../bootstrap/honoured.js';
import { fieldPath, Report } from '../bootstrap/report.js';
import type { Compiled, CompileOptions } from './compiled.js';
import { type LoadedCertificate, type LoadedPair, loadCertificate } from './tls-certificates.js';
import { SECRET_FIELDS } from './tls-fields.js';
import { compileValidation, type PeerCheck } from './tls-validation.js';

/** A secret's `validation_context`, compiled. */
export interface SecretValidation {
  /**
   * The message itself: a `combined_validation_context` merges it over its default, as
   * protobuf's MergeFrom, and compiles the merge, a message of its own.
   */
  message: JsonObject;
  peer: PeerCheck;
  /** `trusted_ca` and `crl` as node:tls takes them. */
  secure: Pick<tls.SecureContextOptions, 'ca' | 'crl'>;
  caCerts: LoadedCertificate[];
}

/** What a Secret compiles to; a field the secret does not have is absent. */
export interface CompiledSecret {
  /** `tls_certificate`; null when it did not load (the findings say why). */
  certificate?: LoadedPair | null;
  validation?: SecretValidation;
}

/** The fields of a secret a TLS context names. */
export type SecretField = 'tls_certificate' | 'validation_context';

/** Findings at the secret's root (`tls_certificate.private_key`), rebased where they are reported. */
const compiled = new WeakMap<JsonObject, Compiled<CompiledSecret>>();

/** Copies the findings of `from` whose path `keep` accepts into `to`, under `base`. */
function reportAt(from: Report, base: string, to: Report, keep: (path: string) => boolean): void {
  const at = (path: string) => (path === '' ? base : fieldPath(base, path));
  for (const p of from.problems) if (keep(p.path)) to.problems.push({ ...p, path: at(p.path) });
  for (const p of from.warningProblems)
    if (keep(p.path)) to.warn(at(p.path), p.message, `${p.path}:${p.message}`);
}

function compileOnce(raw: JsonObject): Compiled<CompiledSecret> {
  const hit = compiled.get(raw);
  if (hit) return hit;
  const findings = new Report('');
  const out = { value: compileValue(raw, findings), findings };
  compiled.set(raw, out);
  return out;
}

function compileValue(secret: JsonObject, report: Report): CompiledSecret {
  checkSecret(secret, '', report);
  const value: CompiledSecret = {};
  const secure: tls.SecureContextOptions = {};
  if (secret.tls_certificate !== undefined) {
    const loaded = loadCertificate(objectOf(secret.tls_certificate), 'tls_certificate', report);
    value.certificate = loaded ?? null;
    if (loaded) {
      secure.cert = loaded.cert;
      secure.key = [loaded.key];
    }
  }
  if (secret.validation_context !== undefined) {
    const message = objectOf(secret.validation_context);
    const own: tls.SecureContextOptions = {};
    const caCerts: LoadedCertificate[] = [];
    const peer = compileValidation(message, 'validation_context', report, own, caCerts);
    const kept: SecretValidation['secure'] = {};
    if (own.ca !== undefined) kept.ca = own.ca;
    if (own.crl !== undefined) kept.crl = own.crl;
    value.validation = { message, peer, secure: kept, caCerts };
    Object.assign(secure, kept);
  }
  if (report.failed) return value;
  try {
    tls.createSecureContext(secure);
  } catch (err) {
    report.error('', `TLS context refused by OpenSSL: ${(err as Error).message}`);
  }
  return value;
}

/**
 * Compiles a secret found at `path` (empty for a discovered one, its own base): a bad one
 * from discovery is rejected (NACKed) and the last good one keeps serving.
 */
export function compileSecret(
  raw: JsonObject,
  path: string,
  options: Pick<CompileOptions, 'report'> = {},
): Compiled<CompiledSecret> {
  const report = options.report ?? new Report(path);
  const { value, findings } = compileOnce(raw);
  reportAt(findings, path, report, () => true);
  return { value, findings: report };
}

/**
 * The compiled value of a secret a TLS context names for its `field`: the findings under that
 * field are reported in `report` at `base` (where the secret is: `static_resources.secrets['s']`),
 * as the context would have found them loading the field itself. Null: `report` gets none
 * (the caller compiles the field again, merged into a message of its own).
 */
export function compiledSecret(
  raw: JsonObject,
  field: SecretField,
  base: string,
  report: Report | null,
): CompiledSecret {
  const { value, findings } = compileOnce(raw);
  if (report) reportAt(findings, base, report, (p) => p === field || p.startsWith(`${field}.`));
  return value;
}

/** Checks the fields of a secret at `path`; `--mode validate` checks a static one no context names by these alone. */
export function checkSecret(secret: JsonObject, path: string, report: Report): void {
  checkFields(secret, path, report, SECRET_FIELDS, 'Secret');
  if (typeof secret.name !== 'string' || secret.name === '')
    report.error(fieldPath(path, 'name'), 'required field missing', 'missing');
}
