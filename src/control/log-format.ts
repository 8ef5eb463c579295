/**
 * The event log file format, shared by the recorder and the replayer. One JSON object per
 * line (ndjson):
 *
 * - a header first: `{"format":"proxy-event-log","version":1,"product":..,"options":..,"bootstrap":..}`
 * - envelopes: `{"seq":1,"at":1732200000000,"source":"bootstrap","event":{"type":..}}`
 * - checkpoints: `{"checkpoint":{"seq":..,"at":..,"state":{..}}}`, written only where the
 *   merge window holds nothing, so a replay may start from one and fold to the same states.
 *
 * A rotated log (after SIGUSR1 or `/reopen_logs`) opens with a header and a checkpoint, so
 * every file replays on its own. A header in the middle of a file starts a new run (a
 * restart appending to the same file): replay folds what follows from the initial state,
 * and sequence numbers go on from the last line before it.
 *
 * Every line is redacted (`redact.ts`) before it is written: secrets never reach the disk.
 */
import type { Envelope, JsonObject, ProxyEvent } from '../../events/index.js';
import type { State } from '../../reducers/index.js';
import { redactedJson } from '../../views/redact.js';

export const LOG_FORMAT = 'proxy-event-log';
export const LOG_VERSION = 1;

export interface LogHeader {
  format: typeof LOG_FORMAT;
  version: number;
  /** Build version of the proxy that wrote the log. */
  product: string;
  /** Effective command-line options of the run. */
  options: JsonObject;
  /** The bootstrap as loaded, or null when the recorder did not get it. */
  bootstrap: JsonObject | null;
  /** Wall-clock time the file was opened, RFC 3339. */
  opened_at: string;
}

export interface LogCheckpoint {
  seq: number;
  at: number;
  state: State;
}

export type LogLine =
  | { kind: 'header'; header: LogHeader }
  | { kind: 'envelope'; envelope: Envelope<ProxyEvent> }
  | { kind: 'checkpoint'; checkpoint: LogCheckpoint };

/** Parses one line; a string result says what is wrong with it. */
export function parseLogLine(text: string): LogLine | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return `not JSON (${(err as Error).message})`;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'not a JSON object';
  const o = value as Record<string, unknown>;
  if (o.format !== undefined) {
    if (o.format !== LOG_FORMAT) return `unknown format ${JSON.stringify(o.format)}`;
    if (o.version !== LOG_VERSION) return `unsupported log version ${JSON.stringify(o.version)}`;
    return { kind: 'header', header: o as unknown as LogHeader };
  }
  if (o.checkpoint !== undefined) {
    const c = o.checkpoint as Record<string, unknown> | null;
    if (!c || !isCount(c.seq) || typeof c.at !== 'number' || typeof c.state !== 'object' || !c.state) {
      return 'checkpoint needs numeric "seq" and "at" and an object "state"';
    }
    return { kind: 'checkpoint', checkpoint: c as unknown as LogCheckpoint };
  }
  const event = o.event as Record<string, unknown> | null | undefined;
  if (!isCount(o.seq)) return 'envelope needs a positive integer "seq"';
  if (typeof o.at !== 'number' || !Number.isFinite(o.at)) return 'envelope needs a numeric "at"';
  if (typeof o.source !== 'string') return 'envelope needs a string "source"';
  if (!event || typeof event !== 'object' || typeof event.type !== 'string') {
    return 'envelope needs an "event" object with a string "type"';
  }
  return { kind: 'envelope', envelope: o as unknown as Envelope<ProxyEvent> };
}

/**
 * A whole number the store can add 1 to: past 2^53 it cannot (and `JSON.parse` has already
 * rounded the text), so a line with such a `seq` is malformed, not where numbering goes on.
 */
function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** One envelope as a log line (with its newline), secrets redacted. */
export function envelopeLine(env: Envelope<ProxyEvent>): string {
  return `${redactedJson({ seq: env.seq, at: env.at, source: env.source, event: env.event })}\n`;
}

export function headerLine(header: LogHeader): string {
  return `${redactedJson(header)}\n`;
}

export function checkpointLine(checkpoint: LogCheckpoint): string {
  return `${redactedJson({ checkpoint })}\n`;
}
