import xxhashWasm from 'xxhash-wasm';
import type { JsonObject } from '../../../events/config.js';
import { objectOf } from '../../../reducers/settings/values.js';
import { type HttpRequest, headerValue } from '../codec/request.js';

/** xxHash64 (seed 0), initialised once when the module loads: the WASM instance is reused. */
const hasher = await xxhashWasm();

/** xxHash64 of a string, seed 0: the hash hashing balancers consume. */
export function xxhash64(value: string): bigint {
  return hasher.h64(value, 0n);
}

type PolicyValue = (req: HttpRequest) => string | undefined;

interface CompiledPolicy {
  value: PolicyValue;
  terminal: boolean;
}

function cookieValue(req: HttpRequest, name: string): string | undefined {
  const header = headerValue(req, 'cookie');
  if (header === undefined) return undefined;
  for (const part of header.split(/[;,]/)) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

function compilePolicy(raw: JsonObject): CompiledPolicy | null {
  const terminal = raw.terminal === true;
  if (raw.header !== undefined) {
    const name = String(objectOf(raw.header).header_name ?? '').toLowerCase();
    return name ? { value: (req) => headerValue(req, name), terminal } : null;
  }
  if (raw.cookie !== undefined) {
    const name = String(objectOf(raw.cookie).name ?? '');
    return name ? { value: (req) => cookieValue(req, name), terminal } : null;
  }
  if (raw.connection_properties !== undefined) {
    return objectOf(raw.connection_properties).source_ip === true
      ? { value: (req) => req.remoteIp, terminal }
      : null;
  }
  if (raw.query_parameter !== undefined) {
    const name = String(objectOf(raw.query_parameter).name ?? '');
    return {
      value: (req) => {
        const q = req.path.indexOf('?');
        return q < 0 ? undefined : (new URLSearchParams(req.path.slice(q + 1)).get(name) ?? undefined);
      },
      terminal,
    };
  }
  return null;
}

/**
 * The route's `hash_policy` list as one function: each policy that yields a value folds it
 * into the hash (`(h << 1 | h >> 63) ^ xxhash(value)`, as the reference combines them),
 * a `terminal` policy that yields stops the walk; null when no policy yields.
 * Cookie policies with a `ttl` do not generate cookies here: they hash an existing cookie only.
 */
export function compileHashPolicy(list: JsonObject[]): ((req: HttpRequest) => bigint | null) | null {
  const policies = list.map(compilePolicy).filter((p): p is CompiledPolicy => p !== null);
  if (policies.length === 0) return null;
  const mask = (1n << 64n) - 1n;
  return (req) => {
    let hash: bigint | null = null;
    for (const p of policies) {
      const v = p.value(req);
      if (v === undefined) continue;
      const h = xxhash64(v);
      hash = hash === null ? h : (((hash << 1n) | (hash >> 63n)) & mask) ^ h;
      if (p.terminal) break;
    }
    return hash;
  };
}
