import type { Operation } from 'fast-json-patch';
import { json, type ViewResult } from '../result.js';

/** `GET /snapshots/diff`: the semantic RFC 6902 patch that turns snapshot `from` into `to`. */
export function renderDiff(from: number, to: number, ops: readonly Operation[]): ViewResult {
  return json({ from, to, patch: ops });
}
