/**
 * The handle's helpers that read nothing of the stream: `base64Escape()`, `timestamp()`,
 * `timestampString()`, and the signature check behind `importPublicKey()` / `verifySignature()`.
 */
import { createPublicKey, type KeyObject, verify } from 'node:crypto';
import { LuaRaise, type LuaVm } from './vm.js';

/** The hash functions the reference's `verifySignature()` takes, as Node names them. */
const HASHES: Record<string, string> = {
  SHA1: 'sha1',
  SHA224: 'sha224',
  SHA256: 'sha256',
  SHA384: 'sha384',
  SHA512: 'sha512',
};

/**
 * Parsed keys by their DER bytes: a script imports the same key on every request, and a key
 * parses in ~20 µs. Bounded, since the DER comes from the script (or a header it read).
 */
const keys = new Map<string, KeyObject | null>();
const MAX_KEYS = 64;

function keyOf(der: Buffer): KeyObject | null {
  const id = der.toString('latin1');
  let key = keys.get(id);
  if (key === undefined) {
    try {
      // The reference reads a DER SubjectPublicKeyInfo (d2i_PUBKEY).
      key = createPublicKey({ key: der, format: 'der', type: 'spki' });
    } catch {
      key = null;
    }
    if (keys.size >= MAX_KEYS) keys.delete(keys.keys().next().value as string);
    keys.set(id, key);
  }
  return key;
}

/** Microseconds since the epoch, from the high-resolution clock. */
function nowMicros(): bigint {
  return BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000));
}

export function registerUtilities(vm: LuaVm): void {
  vm.register('__proxy_b64', (v) => {
    v.pushString(v.bytes(1).toString('base64'));
    return 1;
  });
  // Resolution 0: milliseconds, 1: microseconds; as a string when the second argument is true.
  vm.register('__proxy_now', (v) => {
    const micros = nowMicros();
    const value = v.num(1) === 1 ? micros : micros / 1000n;
    if (v.bool(2)) v.pushString(String(value));
    else v.pushNumber(Number(value));
    return 1;
  });
  // Answers true, or false and why, as the reference's pair.
  vm.register('__proxy_verify', (v) => {
    const name = v.checkString(1, 'the hash function');
    const hash = HASHES[name];
    if (hash === undefined) throw new LuaRaise(`${name} is not supported.`);
    const key = keyOf(v.bytes(2));
    let ok = false;
    if (key !== null) {
      try {
        ok = verify(hash, v.bytes(4), key, v.bytes(3));
      } catch {
        ok = false;
      }
    }
    v.pushBool(ok);
    if (ok) v.pushNil();
    else
      v.pushString(
        key === null ? 'Failed to import the public key.' : 'Failed to verify digest. Error code: 0',
      );
    return 2;
  });
}
