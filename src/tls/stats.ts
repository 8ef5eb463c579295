import type { PeerFailure } from '../config/tls-validation.js';
import type { Counter, Scope } from '../stats/store.js';

/** The reference's `ssl.` counters of one cluster or listener. */
export interface SslStats {
  handshake: Counter;
  connection_error: Counter;
  no_certificate: Counter;
  session_reused: Counter;
  fail_verify_error: Counter;
  fail_verify_san: Counter;
  fail_verify_cert_hash: Counter;
  fail_verify_no_cert: Counter;
  /** `ssl.versions.<TLSv1.2>`, `ssl.ciphers.<name>`, `ssl.curves.<name>`, counted per handshake. */
  scope: Scope;
}

/** OpenSSL's curve names as the reference's stats spell them (`ssl.curves.P-256`). */
const CURVE_NAMES: Record<string, string> = { prime256v1: 'P-256', secp384r1: 'P-384', secp521r1: 'P-521' };

const cache = new WeakMap<Scope, SslStats>();

/** The `ssl.` counters under `scope` (`cluster.<name>` or `listener.<address>`), made once per scope. */
export function sslStats(scope: Scope): SslStats {
  const hit = cache.get(scope);
  if (hit) return hit;
  const s = scope.scope('ssl');
  const stats: SslStats = {
    handshake: s.counter('handshake'),
    connection_error: s.counter('connection_error'),
    no_certificate: s.counter('no_certificate'),
    session_reused: s.counter('session_reused'),
    fail_verify_error: s.counter('fail_verify_error'),
    fail_verify_san: s.counter('fail_verify_san'),
    fail_verify_cert_hash: s.counter('fail_verify_cert_hash'),
    fail_verify_no_cert: s.counter('fail_verify_no_cert'),
    scope: s,
  };
  cache.set(scope, stats);
  return stats;
}

/** Counts a refused peer: its reason, and the failed handshake. */
export function countFailure(stats: SslStats, failure: PeerFailure): void {
  stats[failure].inc();
  stats.connection_error.inc();
}

/** Counts a completed handshake with what it negotiated. */
export function countHandshake(
  stats: SslStats,
  facts: {
    reused: boolean;
    version: string | null;
    cipher: string | undefined;
    peerCert: boolean;
    /** The key exchange group, where node:tls tells it (client sockets only). */
    curve?: string | undefined;
  },
): void {
  stats.handshake.inc();
  if (facts.reused) stats.session_reused.inc();
  if (!facts.peerCert) stats.no_certificate.inc();
  if (facts.version) stats.scope.counter(`versions.${facts.version}`).inc();
  if (facts.cipher) stats.scope.counter(`ciphers.${facts.cipher}`).inc();
  if (facts.curve) stats.scope.counter(`curves.${CURVE_NAMES[facts.curve] ?? facts.curve}`).inc();
}
