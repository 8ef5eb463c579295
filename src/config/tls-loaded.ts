/**
 * Every TLS context the process serves, with the certificates it loaded: one entry per
 * cluster context, then per filter-chain context, as the reference lists its contexts.
 * Each config compiles once (snapshot configs are frozen), with the compile step serve runs.
 */
import type { RawCluster, RawListener } from '../../events/index.js';
import type { ClusterEntry, ListenerEntry, State } from '../../reducers/index.js';
import { listOf } from '../../reducers/settings/values.js';
import { Report } from '../bootstrap/report.js';
import { compileChainTls } from './chain-tls.js';
import { clusterTls } from './cluster-tls.js';
import { type Secrets, type SecretsSource, secretsOf } from './secrets.js';
import type { LoadedCertificate } from './tls-certificates.js';

export interface LoadedContext {
  caCerts: LoadedCertificate[];
  certChains: LoadedCertificate[];
}

/** What compiling one resource's contexts found: the contexts and why a certificate is missing. */
interface Compiled {
  contexts: LoadedContext[];
  errors: string[];
}

/** By the secrets the contexts were compiled with (a rotated secret compiles afresh), then by config. */
const memo = new WeakMap<Secrets, WeakMap<object, Compiled>>();

function once(raw: object, secrets: Secrets, compile: (report: Report) => LoadedContext[]): Compiled {
  const bySecrets = memo.get(secrets) ?? new WeakMap<object, Compiled>();
  memo.set(secrets, bySecrets);
  const hit = bySecrets.get(raw);
  if (hit) return hit;
  const report = new Report('');
  const compiled = { contexts: compile(report), errors: report.errors };
  bySecrets.set(raw, compiled);
  return compiled;
}

function clusterContexts(raw: RawCluster, secrets: Secrets): Compiled {
  const { tls, errors } = clusterTls(raw, secrets);
  const contexts =
    tls && tls.pending.length === 0 ? [{ caCerts: tls.caCerts, certChains: tls.certChains }] : [];
  return { contexts, errors };
}

function listenerContexts(raw: RawListener, secrets: Secrets): Compiled {
  return once(raw, secrets, (report) =>
    listOf(raw.filter_chains).flatMap((chain, i) => {
      const at = `listener '${String(raw.name)}' filter_chains[${i}]`;
      const tls = compileChainTls(chain, at, report, secrets);
      return tls && tls.pending.length === 0 ? [{ caCerts: tls.caCerts, certChains: tls.certChains }] : [];
    }),
  );
}

/** The TLS contexts of the snapshot's clusters and listeners, and what could not be loaded. */
export function loadedContexts(state: {
  clusters: Record<string, ClusterEntry>;
  listeners: Record<string, ListenerEntry>;
  /** Whose static secrets the contexts may name; none without it. */
  bootstrap?: State['bootstrap'];
  discovery?: SecretsSource['discovery'];
}): Compiled {
  const secrets = secretsOf(state);
  const parts = [
    ...Object.values(state.clusters).map((c) => clusterContexts(c.config, secrets)),
    ...Object.values(state.listeners).map((l) => listenerContexts(l.config, secrets)),
  ];
  return { contexts: parts.flatMap((p) => p.contexts), errors: parts.flatMap((p) => p.errors) };
}

/** Milliseconds since the epoch when the first loaded certificate (CA or chain) expires; null: none. */
export function firstExpiry(contexts: readonly LoadedContext[]): number | null {
  let first: number | null = null;
  for (const c of contexts)
    for (const cert of [...c.caCerts, ...c.certChains]) {
      const t = Date.parse(cert.cert.validTo);
      if (first === null || t < first) first = t;
    }
  return first;
}
