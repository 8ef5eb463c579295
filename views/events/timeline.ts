/**
 * The event timeline as `proxy replay --timeline` prints it: one line per event with its
 * sequence number, local and UTC time, source, type and summary, or the same as JSON.
 */
import type { Envelope } from '../../events/index.js';
import { redact } from '../redact.js';
import { summarize } from './summary.js';
import { formatLocal, formatUtc } from './time.js';

/** One event as the JSON timeline lists it (the event itself redacted). */
export interface TimelineEntry {
  seq: number;
  at: number;
  local: string;
  utc: string;
  source: string;
  type: string;
  summary: string;
  event: unknown;
}

export function timelineEntry(env: Envelope<{ type: string }>): TimelineEntry {
  return {
    seq: env.seq,
    at: env.at,
    local: formatLocal(env.at),
    utc: formatUtc(env.at),
    source: env.source,
    type: env.event.type,
    summary: summarize(env).text,
    event: redact(env.event),
  };
}

/**
 * `  12  2026-11-21 15:00:00.100 +01:00  14:00:00.100Z  health_check  health/active-changed  cluster svc: ...`
 * The UTC column shows the time of day only when the local date is the UTC date too.
 */
export function timelineLine(env: Envelope<{ type: string }>, seqWidth = 6): string {
  const local = formatLocal(env.at);
  const utc = formatUtc(env.at);
  const utcShown = utc.slice(0, 10) === local.slice(0, 10) ? utc.slice(11) : utc;
  return `${String(env.seq).padStart(seqWidth)}  ${local}  ${utcShown}  ${env.source}  ${env.event.type}  ${summarize(env).text}`;
}

/** The whole text timeline, with a heading naming the columns. */
export function renderTimelineText(envelopes: readonly Envelope<{ type: string }>[]): string {
  const width = Math.max(3, ...envelopes.map((e) => String(e.seq).length));
  const head = `${'seq'.padStart(width)}  local time (UTC)  source  type  summary`;
  return `${[head, ...envelopes.map((e) => timelineLine(e, width))].join('\n')}\n`;
}

export function renderTimelineJson(envelopes: readonly Envelope<{ type: string }>[]): string {
  return `${JSON.stringify(envelopes.map(timelineEntry), null, 1)}\n`;
}
