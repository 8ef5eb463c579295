/**
 * Certificate material of the TLS compile steps: a DataSource's bytes (a file read once per
 * config object), a `TlsCertificate`'s chain and key as node:tls takes them, and the first
 * certificate of each for `/certs`.
 */
import { X509Certificate } from 'node:crypto';
import type { JsonObject } from '../../events/index.js';
import { objectOf } from '../../reducers/settings/values.js';
import { inlineBytes } from '../bootstrap/data-source.js';
import { checkFields } from '../bootstrap/honoured.js';
import { readNamedFile } from '../bootstrap/read-file.js';
import type { Report } from '../bootstrap/report.js';
import { CERTIFICATE_FIELDS, DATA_SOURCE_FIELDS } from './tls-fields.js';

/** A certificate the process loaded, as `/certs` and `days_until_first_cert_expiring` need it. */
export interface LoadedCertificate {
  /** The file name, or `<inline>`. */
  path: string;
  /** The first certificate of the PEM (the leaf of a chain, the first CA of a bundle). */
  cert: X509Certificate;
}

/**
 * File reads by DataSource: one config is compiled by validation, by serve and by `/certs`,
 * and each would read its files again. Configs are frozen, so a file is read once per config
 * object; a new config (a reload, an xDS update) reads afresh.
 */
const fileReads = new WeakMap<JsonObject, { filename: string; bytes: Buffer }>();

/** A DataSource's bytes, or undefined after reporting why not. */
export function readSource(
  raw: JsonObject,
  path: string,
  report: Report,
): { bytes: Buffer; path: string } | undefined {
  checkFields(raw, path, report, DATA_SOURCE_FIELDS, 'DataSource');
  if (typeof raw.filename === 'string') {
    try {
      let read = fileReads.get(raw);
      if (read?.filename !== raw.filename) {
        read = { filename: raw.filename, bytes: readNamedFile(raw.filename) };
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
export function firstCertificate(
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

/** PEM blocks: a label, its body, and the same label closing it. */
const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END ([A-Z0-9 ]+)-----/g;
const CERTIFICATE_LABELS = new Set(['CERTIFICATE', 'TRUSTED CERTIFICATE', 'X509 CERTIFICATE']);

/**
 * The first certificate of a CA bundle, once every certificate in it parses; else an error.
 * OpenSSL, as node:tls hands it the bundle, stops at the first block it cannot read and keeps
 * the certificates before it: a corrupt or cut block silently dropped every CA after it, so peers
 * signed by a rotated-in root failed their handshakes. The reference refuses such a bundle
 * (`Failed to load trusted CA certificates`); text between blocks is ignored by both.
 */
export function caBundle(
  bytes: Buffer,
  source: string,
  path: string,
  report: Report,
): LoadedCertificate | undefined {
  const text = bytes.toString('latin1');
  let first: LoadedCertificate | undefined;
  let n = 0;
  let end = 0;
  for (const m of text.matchAll(PEM_BLOCK)) {
    n++;
    end = m.index + m[0].length;
    const where = `block ${n} of '${source}'`;
    if (m[1] !== m[3]) {
      report.error(path, `failed to load trusted CA certificates: ${where} begins ${m[1]} and ends ${m[3]}`);
      return undefined;
    }
    if (!CERTIFICATE_LABELS.has(m[1]!)) continue;
    try {
      const cert = new X509Certificate(m[0]);
      first ??= { path: source, cert };
    } catch (err) {
      report.error(
        path,
        `failed to load trusted CA certificates: ${where} does not parse: ${(err as Error).message}`,
      );
      return undefined;
    }
  }
  if (text.indexOf('-----BEGIN ', end) !== -1) {
    report.error(path, `failed to load trusted CA certificates: '${source}' has a block with no END line`);
    return undefined;
  }
  if (!first) report.error(path, `no certificate in '${source}'`);
  return first;
}

/** A `TlsCertificate` loaded: its chain and key as node:tls takes them. */
export interface LoadedPair {
  cert: Buffer;
  key: { pem: Buffer; passphrase?: string };
  /** The chain's first certificate, for `/certs`. */
  first?: LoadedCertificate;
}

/** A `TlsCertificate`'s chain and key as node:tls takes them; undefined after reporting why not. */
export function loadCertificate(c: JsonObject, at: string, report: Report): LoadedPair | undefined {
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
