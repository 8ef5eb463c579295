/**
 * The secrets TLS contexts name by an `SdsSecretConfig`: static ones
 * (`static_resources.secrets`, v2 `auth.Secret`), named without `sds_config`, and those from
 * secret discovery, named with one. The lookup is built once per bootstrap and set of
 * discovered secrets (their identities) and passed to the TLS compile step, at validate and
 * at serve alike.
 */
import type { Json, JsonObject } from '../../events/index.js';
import { objectOf } from '../../reducers/settings/values.js';
import type { SecretEntry } from '../../reducers/state.js';

export interface Secrets {
  /** The bootstrap's static secrets by name. */
  readonly static: ReadonlyMap<string, JsonObject>;
  /**
   * Secrets from SDS by name; null where there is no snapshot to read them from (`--mode
   * validate`, a discovered resource's compile step): a reference is then checked for its form only.
   */
  readonly dynamic: ReadonlyMap<string, JsonObject> | null;
}

export const NO_SECRETS: Secrets = { static: new Map(), dynamic: null };

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
  const out: Secrets = { static: secrets, dynamic: null };
  built.set(bootstrap, out);
  return out;
}

/** What `secretsOf` reads of a snapshot. */
export interface SecretsSource {
  bootstrap?: { config: JsonObject } | null;
  discovery?: { secrets: Readonly<Record<string, SecretEntry>> };
}

const NO_BOOTSTRAP: JsonObject = {};
const withDynamic = new WeakMap<JsonObject, WeakMap<object, Secrets>>();

/**
 * The static and discovered secrets of a snapshot, the same object while neither changes: a
 * context compiled with it is rebuilt only once a secret changed (new handshakes use it).
 */
export function secretsOf(state: SecretsSource): Secrets {
  const bootstrap = state.bootstrap?.config ?? NO_BOOTSTRAP;
  const discovered = state.discovery?.secrets ?? {};
  const byBootstrap = withDynamic.get(bootstrap) ?? new WeakMap<object, Secrets>();
  withDynamic.set(bootstrap, byBootstrap);
  let out = byBootstrap.get(discovered);
  if (!out) {
    out = {
      static: staticSecrets(state.bootstrap?.config).static,
      dynamic: new Map(Object.values(discovered).map((e) => [e.name, e.config])),
    };
    byBootstrap.set(discovered, out);
  }
  return out;
}
