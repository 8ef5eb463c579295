/**
 * Copies of a rejected update. A management server may answer each NACK by sending the same
 * response again (go-control-plane does); judging every copy would decode, compile, log and
 * record it thousands of times a second. A watch's last rejected update is remembered by a
 * digest: a copy is rejected with the same error unread and only counted, and the count is
 * reported now and then (one event and one log line, not one per copy).
 */
import { createHash, type Hash } from 'node:crypto';
import type { Update } from './types.js';

type Work = { text: string } | { value: unknown };

/**
 * Feeds a decoded message (bytes, lists, objects, scalars) to `hash`, with its structure.
 * Without recursion: a file or REST update is JSON nested as deep as `JSON.parse` reads, and
 * it is hashed before it is judged.
 */
function feed(hash: Hash, root: unknown): void {
  const stack: Work[] = [{ value: root }];
  for (let work = stack.pop(); work; work = stack.pop()) {
    if ('text' in work) {
      hash.update(work.text);
      continue;
    }
    const value = work.value;
    if (value instanceof Uint8Array) hash.update('b').update(String(value.length)).update(':').update(value);
    else if (Array.isArray(value)) {
      hash.update('[');
      stack.push({ text: ']' });
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i] });
    } else if (value !== null && typeof value === 'object') {
      hash.update('{');
      stack.push({ text: '}' });
      const entries = Object.entries(value);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [k, v] = entries[i]!;
        stack.push({ value: v }, { text: `${k}=` });
      }
    } else hash.update(`${typeof value}:${String(value)};`);
  }
}

/**
 * A digest of an update (a response off a stream, or the JSON of a file or REST source)
 * without its nonce, which differs in every copy.
 */
function digestOf(update: Update): string {
  const hash = createHash('sha1');
  if (update !== null && typeof update === 'object' && !Array.isArray(update)) {
    for (const [k, v] of Object.entries(update)) {
      if (k === 'nonce') continue;
      hash.update(k).update('=');
      feed(hash, v);
    }
  } else feed(hash, update);
  return hash.digest('base64');
}

export class RejectedCopies {
  private last: { digest: string; error: string; version: string } | null = null;
  /** Copies rejected since the last report. */
  private pending = 0;

  /** The error of the last rejection when `update` is a copy of it (counted), else null. */
  again(update: Update): string | null {
    const last = this.last;
    if (!last || last.digest !== digestOf(update)) return null;
    this.pending += 1;
    return last.error;
  }

  /** How `update` was judged (null: accepted): a rejection is what later copies are known by. */
  judged(update: Update, error: string | null): void {
    const body = update as { version_info?: unknown; system_version_info?: unknown } | null;
    const version = body?.version_info ?? body?.system_version_info;
    this.last =
      error === null
        ? null
        : { digest: digestOf(update), error, version: typeof version === 'string' ? version : '' };
  }

  /** The copies counted since the last call, with the rejection they repeat; null when none. */
  report(): { version: string; error: string; count: number } | null {
    if (this.pending === 0 || !this.last) return null;
    const count = this.pending;
    this.pending = 0;
    return { version: this.last.version, error: this.last.error, count };
  }
}
