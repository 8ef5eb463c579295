import type { Operation } from 'fast-json-patch';
import { redactPatch } from '../redact.js';
import { json, type ViewResult } from '../result.js';

/** `GET /snapshots/diff`: the semantic RFC 6902 patch that turns snapshot `from` into `to`, secrets redacted. */
export function renderDiff(from: number, to: number, ops: readonly Operation[]): ViewResult {
  return json({ from, to, patch: redactPatch(ops) });
}
