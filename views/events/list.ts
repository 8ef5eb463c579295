import type { Envelope, ProxyEvent } from '../../events/index.js';
import { redact, redactedJson } from '../redact.js';
import { json, type ViewResult } from '../result.js';

/** What `/events` knows besides the envelopes it lists. */
export interface EventsPage {
  /** Oldest sequence number still listed by `/events`. */
  oldestSeq: number;
  /** Sequence number of the last envelope ingested. */
  latestSeq: number;
  envelopes: readonly Envelope<ProxyEvent>[];
}

/** `GET /events`: the envelopes, oldest first, with the bounds of the retained past; secrets redacted. */
export function renderEvents(page: EventsPage): ViewResult {
  return json({ oldest_seq: page.oldestSeq, latest_seq: page.latestSeq, events: page.envelopes.map(redact) });
}

/** One envelope as a server-sent event (secrets redacted): `id` is the sequence number, so a client can resume from it. */
export function sseFrame(env: Envelope<ProxyEvent>): string {
  return `id: ${env.seq}\ndata: ${redactedJson(env)}\n\n`;
}
