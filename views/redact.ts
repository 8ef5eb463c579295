/**
 * The one redaction policy for everything that leaves the process: admin answers
 * (`/config_dump`, `/events` and its stream, `/snapshots/diff`, `/snapshots/blame`,
 * `/server_info`), the event-log file and every `proxy replay` output. Secrets are
 * recognised by field name wherever they sit, so a new output only has to call one of the
 * functions here. Pure: every function returns a copy and never touches its input.
 */
import type { Operation } from 'fast-json-patch';
import { isNode, isScalar, parseDocument, visit } from 'yaml';
import { SECRET_FIELD_NAMES, SECRET_LOCATION_FIELDS } from '../events/config.js';

/** Fields holding a whole bootstrap as text (`--config-yaml`, in server info and the log header). */
const BOOTSTRAP_TEXT_FIELDS = new Set(['config_yaml', 'configYaml']);

export const REDACTED = '[redacted]';
const REDACTED_BYTES = Buffer.from(REDACTED).toString('base64');

/**
 * A quick test on serialised JSON: can it hold anything to redact? A secret field appears
 * as `"name":` (key names need no escaping), a bootstrap text only matters when non-empty.
 * A false positive costs a second pass, never a leak.
 */
const MAY_HOLD_SECRET = new RegExp(
  `"(?:${[...SECRET_FIELD_NAMES].join('|')})":|"(?:${[...BOOTSTRAP_TEXT_FIELDS].join('|')})":"[^"]`,
);

/** Sets `key` as an own property even when it is `__proto__`. */
function put(out: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(out, key, { value, enumerable: true, writable: true });
  else out[key] = value;
}

/** A secret's value: strings and inline bytes replaced, a `DataSource`'s `filename` kept. */
function redactSecret(value: unknown, key?: string): unknown {
  if (typeof value === 'string') return key === 'inline_bytes' ? REDACTED_BYTES : REDACTED;
  if (Array.isArray(value)) return value.map((v) => redactSecret(v));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, inner] of Object.entries(value))
    put(out, k, SECRET_LOCATION_FIELDS.has(k) ? inner : redactSecret(inner, k));
  return out;
}

/** A copy of `value` (any JSON-shaped data: events, snapshots, options) with every secret redacted. */
export function redact<T>(value: T): T {
  return redactValue(value) as T;
}

function redactValue(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactValue);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    if (SECRET_FIELD_NAMES.has(key)) put(out, key, redactSecret(inner));
    else if (BOOTSTRAP_TEXT_FIELDS.has(key) && typeof inner === 'string')
      put(out, key, redactBootstrapText(inner));
    else put(out, key, redactValue(inner));
  }
  return out;
}

/**
 * `value` found at `path` (object keys and array indices, from the root of a redactable
 * document): a value below a secret field is redacted even though it carries no secret key
 * itself, as a JSON Patch operation or a blame answer shows it.
 */
export function redactAt(path: readonly string[], value: unknown): unknown {
  let wrapped: unknown = value;
  for (let i = path.length - 1; i >= 0; i--) {
    const holder: Record<string, unknown> = {};
    put(holder, path[i] as string, wrapped);
    wrapped = holder;
  }
  let out = redactValue(wrapped);
  for (const key of path) out = (out as Record<string, unknown>)[key];
  return out;
}

/** An RFC 6902 patch with every operation's `value` redacted for where it applies. */
export function redactPatch(ops: readonly Operation[]): Operation[] {
  return ops.map((op) => ('value' in op ? { ...op, value: redactAt(pointerTokens(op.path), op.value) } : op));
}

function pointerTokens(pointer: string): string[] {
  return pointer
    .split('/')
    .slice(1)
    .map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** JSON text of `value` with secrets redacted; the common case (nothing secret) costs one stringify. */
export function redactedJson(value: unknown): string {
  const text = JSON.stringify(value);
  return MAY_HOLD_SECRET.test(text) ? JSON.stringify(redactValue(value)) : text;
}

/** Every string below a secret field of `value`, to check that none survived. */
function secretStrings(value: unknown, inSecret: boolean, out: Set<string>): Set<string> {
  if (typeof value === 'string') {
    if (inSecret && value !== '') out.add(value);
  } else if (Array.isArray(value)) {
    for (const v of value) secretStrings(v, inSecret, out);
  } else if (value !== null && typeof value === 'object') {
    for (const [k, inner] of Object.entries(value))
      secretStrings(inner, inSecret ? !SECRET_LOCATION_FIELDS.has(k) : SECRET_FIELD_NAMES.has(k), out);
  }
  return out;
}

/**
 * A bootstrap given as YAML or JSON text, with the values of secret fields replaced and the
 * rest (layout, comments) kept. Text that cannot be parsed, or where a secret still shows
 * after the rewrite (an anchor that an alias pointed a secret field at), is withheld whole.
 */
export function redactBootstrapText(text: string): string {
  const doc = parseDocument(text, { uniqueKeys: false });
  if (doc.errors.length > 0) return text.trim() === '' ? text : REDACTED;
  const secrets = secretStrings(doc.toJS({ maxAliasCount: -1 }), false, new Set());
  if (secrets.size === 0) return text;
  visit(doc, {
    Pair(_, pair) {
      if (!isScalar(pair.key) || !SECRET_FIELD_NAMES.has(String(pair.key.value))) return undefined;
      const current: unknown = isNode(pair.value) ? pair.value.toJS(doc) : pair.value;
      pair.value = doc.createNode(redactSecret(current));
      return visit.SKIP;
    },
  });
  const out = doc.toString();
  for (const secret of secrets) if (out.includes(secret)) return REDACTED;
  return out;
}
