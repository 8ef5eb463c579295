/**
 * Which events a timeline shows: the same filters for `proxy replay --timeline` and
 * `/events` (JSON, HTML and the live stream). Every list is "any of"; an empty list lets
 * everything through.
 */
import type { Envelope } from '../../events/index.js';
import { summarize } from './summary.js';
import type { TimePoint } from './time.js';

export interface EventFilter {
  /** Type prefixes: `health/` keeps every health event, `health/active-changed` that type. */
  types: string[];
  /** Edges that produced the event, exactly (`admin`, `health_check`, `bootstrap`...). */
  sources: string[];
  clusters: string[];
  listeners: string[];
  /** `ip:port`, or an IP alone for every port of it. */
  hosts: string[];
  /** Events after this sequence number, or at or after this instant. */
  since: TimePoint | null;
  /** Events up to and including this sequence number or instant. */
  until: TimePoint | null;
}

export const NO_FILTER: EventFilter = {
  types: [],
  sources: [],
  clusters: [],
  listeners: [],
  hosts: [],
  since: null,
  until: null,
};

/** `a,b` and repeated values alike, blanks dropped. */
export function splitList(values: readonly string[]): string[] {
  return values
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
}

const hostMatches = (wanted: string, address: string): boolean =>
  wanted === address || address.startsWith(`${wanted}:`);

export function matchesFilter(env: Envelope<{ type: string }>, filter: EventFilter): boolean {
  const { since, until } = filter;
  if (since && ('seq' in since ? env.seq <= since.seq : env.at < since.time)) return false;
  if (until && ('seq' in until ? env.seq > until.seq : env.at > until.time)) return false;
  if (filter.types.length > 0 && !filter.types.some((t) => env.event.type.startsWith(t))) return false;
  if (filter.sources.length > 0 && !filter.sources.includes(env.source)) return false;
  if (filter.clusters.length + filter.listeners.length + filter.hosts.length === 0) return true;
  const s = summarize(env);
  if (filter.clusters.length > 0 && !s.clusters.some((c) => filter.clusters.includes(c))) return false;
  if (filter.listeners.length > 0 && !s.listeners.some((l) => filter.listeners.includes(l))) return false;
  if (filter.hosts.length > 0 && !s.hosts.some((h) => filter.hosts.some((w) => hostMatches(w, h)))) {
    return false;
  }
  return true;
}

/** The filter as words, for a heading or an empty result: `type health/, cluster svc`. */
export function describeFilter(filter: EventFilter): string {
  const parts: string[] = [];
  const point = (p: TimePoint) => ('seq' in p ? `seq ${p.seq}` : new Date(p.time).toISOString());
  if (filter.since) parts.push(`since ${point(filter.since)}`);
  if (filter.until) parts.push(`until ${point(filter.until)}`);
  for (const [name, list] of [
    ['type', filter.types],
    ['source', filter.sources],
    ['cluster', filter.clusters],
    ['listener', filter.listeners],
    ['host', filter.hosts],
  ] as const) {
    if (list.length > 0) parts.push(`${name} ${list.join(' or ')}`);
  }
  return parts.join(', ');
}
