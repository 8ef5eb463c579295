import type { Json } from '../../events/index.js';

/** Fields whose whole value is secret wherever they appear (TLS keys, key passwords, ticket keys). */
const SECRET_FIELDS = new Set([
  'private_key',
  'password',
  'session_ticket_keys',
  'hmac_secret',
  'generic_secret',
]);
const REDACTED = '[redacted]';
const REDACTED_BYTES = Buffer.from(REDACTED).toString('base64');

/** A secret DataSource keeps its `filename` (a path is not the secret) and loses inline data. */
function redactSecret(value: Json): Json {
  if (typeof value === 'string') return REDACTED;
  if (Array.isArray(value)) return value.map(redactSecret);
  if (value === null || typeof value !== 'object') return value;
  const out: { [key: string]: Json } = {};
  for (const [key, inner] of Object.entries(value)) {
    if (key === 'filename' || key === '@type') out[key] = inner;
    else if (key === 'inline_bytes') out[key] = REDACTED_BYTES;
    else out[key] = redactSecret(inner);
  }
  return out;
}

/** A copy of `value` with every secret field's inline contents replaced by `[redacted]`. */
export function redact(value: Json): Json {
  if (Array.isArray(value)) return value.map(redact);
  if (value === null || typeof value !== 'object') return value;
  const out: { [key: string]: Json } = {};
  for (const [key, inner] of Object.entries(value))
    out[key] = SECRET_FIELDS.has(key) ? redactSecret(inner) : redact(inner);
  return out;
}
