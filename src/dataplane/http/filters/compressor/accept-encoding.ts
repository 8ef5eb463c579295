/**
 * Which encoding a response gets, from the request's `Accept-Encoding` and the compressors of
 * the chain, as the reference decides it once per request for all its compressor filters: the
 * highest q-value among the encodings both sides have (`identity` and `*` included), a tie going
 * to a compressor with `choose_first`, `*` to the first compressor of the chain.
 */

/** How the request's header decided: the counters `header_compressor_used` / `_overshadowed`, `header_identity`, `header_wildcard`, `header_not_valid`. */
export type HeaderVerdict = 'valid' | 'identity' | 'wildcard' | 'not_valid';

export interface EncodingDecision {
  /** The chosen `Content-Encoding`, or `identity` for none. */
  encoding: string;
  verdict: HeaderVerdict;
}

/** A compressor of the chain that may take the response (its content types allow it), in chain order. */
export interface Candidate {
  encoding: string;
  chooseFirst: boolean;
}

const IDENTITY = 'identity';
const WILDCARD = '*';
/** A q-value as the reference parses one (a decimal number); anything else drops the token. */
const Q_VALUE = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** One `Accept-Encoding` entry: its coding (lowercase) and weight; null when its q-value does not parse. */
function entry(token: string): { coding: string; q: number } | null {
  const semi = token.indexOf(';');
  const coding = (semi < 0 ? token : token.slice(0, semi)).trim().toLowerCase();
  if (semi < 0) return { coding, q: 1 };
  const params = token.slice(semi + 1);
  const eq = params.indexOf('=');
  if (eq < 0 || params.slice(0, eq).trim().toLowerCase() !== 'q') return { coding, q: 1 };
  const value = params.slice(eq + 1).trim();
  return Q_VALUE.test(value) ? { coding, q: Number(value) } : null;
}

/** The encoding for a response, given the request's `Accept-Encoding` value and the chain's candidates. */
export function chooseEncoding(acceptEncoding: string, candidates: readonly Candidate[]): EncodingDecision {
  // Each encoding once, at its first compressor (a later one for the same encoding is ignored).
  const allowed = new Map<string, Candidate & { order: number }>();
  for (const c of candidates)
    if (!allowed.has(c.encoding)) allowed.set(c.encoding, { ...c, order: allowed.size });
  const entries: Array<{ coding: string; q: number }> = [];
  for (const token of acceptEncoding.split(',')) {
    if (token.trim() === '') continue;
    const e = entry(token);
    if (e === null) continue;
    entries.push(e);
    // Refused by the client; kept in `entries` so a later `*` does not bring it back.
    if (e.q === 0) allowed.delete(e.coding);
  }
  if (entries.length === 0 || allowed.size === 0) return { encoding: IDENTITY, verdict: 'not_valid' };
  let choice = { coding: IDENTITY, q: 0 };
  for (const e of entries) {
    if (!allowed.has(e.coding) && e.coding !== IDENTITY && e.coding !== WILDCARD) continue;
    if (e.q > choice.q || (e.q === choice.q && allowed.get(e.coding)?.chooseFirst === true)) choice = e;
  }
  if (!(choice.q > 0)) return { encoding: IDENTITY, verdict: 'not_valid' };
  if (choice.coding === IDENTITY) return { encoding: IDENTITY, verdict: 'identity' };
  if (choice.coding === WILDCARD) {
    let first: (Candidate & { order: number }) | undefined;
    for (const c of allowed.values()) if (first === undefined || c.order < first.order) first = c;
    return { encoding: (first as Candidate).encoding, verdict: 'wildcard' };
  }
  return { encoding: choice.coding, verdict: 'valid' };
}
