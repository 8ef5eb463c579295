/**
 * Static secrets (`static_resources.secrets`, v2 `auth.Secret`): TLS contexts name them by
 * an `sds_secret_config` without `sds_config`. The lookup is built once per bootstrap (its
 * identity) and passed to the TLS compile step, at validate and at serve alike.
 */
import type { Json, JsonObject } from '../../events/index.js';
import { objectOf } from '../../reducers/settings/values.js';

/** The bootstrap's static secrets by name. */
export type Secrets = ReadonlyMap<string, JsonObject>;

export const NO_SECRETS: Secrets = new Map();

const built = new WeakMap<JsonObject, Secrets>();

/** The static secrets of a bootstrap; the first of a duplicated name wins (validate reports it). */
export function staticSecrets(bootstrap: JsonObject | null | undefined): Secrets {
  if (!bootstrap) return NO_SECRETS;
  const hit = built.get(bootstrap);
  if (hit) return hit;
  const secrets = new Map<string, JsonObject>();
  const list = objectOf(bootstrap.static_resources).secrets;
  for (const s of Array.isArray(list) ? (list as Json[]) : []) {
    const secret = objectOf(s);
    if (typeof secret.name === 'string' && !secrets.has(secret.name)) secrets.set(secret.name, secret);
  }
  built.set(bootstrap, secrets);
  return secrets;
}
