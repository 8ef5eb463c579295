import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Json, JsonObject } from '../../events/index.js';
import { objectOf } from '../../reducers/settings/values.js';
import type { CertificateDetails, TlsContextCertificates } from '../../views/certs/render.js';

function list(value: Json | undefined): JsonObject[] {
  return Array.isArray(value) ? value.map(objectOf) : [];
}

/** Every `common_tls_context` in the bootstrap (listener and cluster TLS contexts), in document order. */
export function tlsContexts(value: Json, out: JsonObject[] = []): JsonObject[] {
  if (Array.isArray(value)) for (const v of value) tlsContexts(v, out);
  else if (value !== null && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      if (key === 'common_tls_context') out.push(objectOf(inner));
      else tlsContexts(inner, out);
    }
  }
  return out;
}

/** `subjectAltName` (`DNS:a, IP Address:1.2.3.4, URI:x`) as the proto's one-of entries. */
function altNames(cert: X509Certificate): CertificateDetails['subjectAltNames'] {
  return (cert.subjectAltName ?? '')
    .split(', ')
    .filter(Boolean)
    .flatMap((entry): CertificateDetails['subjectAltNames'] => {
      const colon = entry.indexOf(':');
      const kind = entry.slice(0, colon);
      const value = entry.slice(colon + 1);
      if (kind === 'DNS') return [{ dns: value }];
      if (kind === 'URI') return [{ uri: value }];
      if (kind === 'IP Address') return [{ ip_address: value }];
      return [];
    });
}

/** The first certificate of a DataSource (a file, or inline PEM shown as `<inline>`), or null. */
async function readCertificate(source: JsonObject): Promise<CertificateDetails | null> {
  let pem: string;
  let path: string;
  if (typeof source.filename === 'string') {
    path = source.filename;
    pem = await readFile(path, 'utf8');
  } else if (typeof source.inline_string === 'string') {
    path = '<inline>';
    pem = source.inline_string;
  } else return null;
  const cert = new X509Certificate(pem);
  return {
    path,
    serialNumber: cert.serialNumber.toLowerCase(),
    subjectAltNames: altNames(cert),
    validFrom: Date.parse(cert.validFrom),
    expiration: Date.parse(cert.validTo),
  };
}

/**
 * Reads the certificates every TLS context of the bootstrap names: its chains
 * (`tls_certificates`, or static secrets named by `tls_certificate_sds_secret_configs`) and
 * its CA (`validation_context.trusted_ca`, or the named validation secret). A file that
 * cannot be read or parsed is reported through `onError` and left out.
 */
export async function loadedCertificates(
  bootstrap: JsonObject,
  onError: (path: string, err: unknown) => void,
): Promise<TlsContextCertificates[]> {
  const secrets = new Map(
    list(objectOf(bootstrap.static_resources).secrets).map((s) => [String(s.name ?? ''), s] as const),
  );
  const read = async (sources: JsonObject[]) => {
    const out: CertificateDetails[] = [];
    for (const source of sources) {
      try {
        const details = await readCertificate(source);
        if (details) out.push(details);
      } catch (err) {
        onError(String(source.filename ?? '<inline>'), err);
      }
    }
    return out;
  };
  const contexts: TlsContextCertificates[] = [];
  for (const ctx of tlsContexts(bootstrap.static_resources ?? {})) {
    const chains = [
      ...list(ctx.tls_certificates),
      ...list(ctx.tls_certificate_sds_secret_configs).map((c) =>
        objectOf(secrets.get(String(c.name ?? ''))?.tls_certificate),
      ),
    ].map((c) => objectOf(c.certificate_chain));
    const validation = ctx.validation_context_sds_secret_config
      ? objectOf(
          secrets.get(String(objectOf(ctx.validation_context_sds_secret_config).name ?? ''))
            ?.validation_context,
        )
      : objectOf(ctx.validation_context);
    const ca = validation.trusted_ca ? [objectOf(validation.trusted_ca)] : [];
    contexts.push({ caCert: await read(ca), certChain: await read(chains) });
  }
  return contexts;
}
