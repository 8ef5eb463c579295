/**
 * A semantic JSON Patch (see `views/snapshot-diff.ts`) in words: one line per operation,
 * naming the cluster, host, listener or runtime layer it touches and the value before and
 * after, so "what changed between 14:00 and 14:05" reads without decoding pointers.
 */
import type { Operation } from 'fast-json-patch';
import type { Envelope } from '../../events/index.js';
import { parsePointer } from '../snapshot-diff.js';
import { formatLocal, formatUtc } from './time.js';
import { timelineEntry, timelineLine } from './timeline.js';

/** A value in a line of text: JSON, cut short when long. */
function shown(value: unknown, max = 80): string {
  const text = value === undefined ? 'nothing' : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 3)}...` : text;
}

/** Who a path is about, and the field below them (empty when the path is the thing itself). */
function subjectOf(tokens: readonly string[]): { subject: string; field: string[] } {
  const [top, name, kind, member, ...rest] = tokens;
  if (top === 'clusters' && name !== undefined) {
    if (kind === 'hosts' && member !== undefined)
      return { subject: `cluster ${name}, host ${member}`, field: rest };
    return { subject: `cluster ${name}`, field: tokens.slice(2) };
  }
  if (top === 'listeners' && name !== undefined)
    return { subject: `listener ${name}`, field: tokens.slice(2) };
  if (top === 'runtime' && name === 'layers' && kind !== undefined) {
    if (member === 'values' && rest.length > 0)
      return { subject: `runtime layer ${kind}, key ${rest.join('/')}`, field: [] };
    return { subject: `runtime layer ${kind}`, field: tokens.slice(3) };
  }
  if (top === 'rejected' && name !== undefined)
    return { subject: `rejected update (seq ${name})`, field: tokens.slice(2) };
  return { subject: top ?? 'snapshot', field: tokens.slice(1) };
}

/**
 * One line per operation. `before` is the value at a path in the earlier snapshot (for
 * "from -> to"); a patch of `add`, `remove` and `replace` is what `semanticDiff` makes.
 */
export function describePatch(ops: readonly Operation[], before: (tokens: string[]) => unknown): string[] {
  return ops.map((op) => {
    const tokens = parsePointer(op.path) ?? [];
    const { subject, field } = subjectOf(tokens);
    const what = field.join('.');
    const old = before(tokens);
    switch (op.op) {
      case 'add':
        if (what) return `${subject}: ${what} set to ${shown(op.value)}`;
        return op.value !== null && typeof op.value === 'object'
          ? `${subject} added`
          : `${subject} set to ${shown(op.value)}`;
      case 'remove':
        if (what) return `${subject}: ${what} removed (was ${shown(old)})`;
        return old !== null && typeof old === 'object'
          ? `${subject} removed`
          : `${subject} removed (was ${shown(old)})`;
      case 'replace':
        return `${subject}: ${what || 'value'} ${shown(old)} -> ${shown(op.value)}`;
      default:
        return `${subject}: ${op.op} ${op.path}`;
    }
  });
}

/** What `proxy replay --diff A..B` reports: the points, the events between, the change. */
export interface DiffReport {
  from: { seq: number; at: number };
  to: { seq: number; at: number };
  events: readonly Envelope<{ type: string }>[];
  /** The semantic patch from `from` to `to`, secrets redacted. */
  patch: readonly Operation[];
  /** The value at a path in the `from` snapshot, secrets redacted. */
  before(tokens: string[]): unknown;
}

const point = (p: { seq: number; at: number }): string =>
  `seq ${p.seq} (${formatLocal(p.at)}, ${formatUtc(p.at)})`;

export function renderDiffReport(report: DiffReport, format: 'text' | 'json'): string {
  const changes = describePatch(report.patch, report.before);
  if (format === 'json') {
    return `${JSON.stringify(
      {
        from: report.from,
        to: report.to,
        events: report.events.map(timelineEntry),
        changes,
        patch: report.patch,
      },
      null,
      1,
    )}\n`;
  }
  const lines = [
    `from ${point(report.from)}`,
    `to   ${point(report.to)}`,
    '',
    `${report.events.length} ${report.events.length === 1 ? 'event' : 'events'} in between:`,
    ...report.events.map((env) => timelineLine(env)),
    '',
    changes.length === 0 ? 'nothing changed' : `what changed (${changes.length}):`,
    ...changes.map((c) => `  ${c}`),
    '',
    'JSON Patch:',
    JSON.stringify(report.patch, null, 1),
  ];
  return `${lines.join('\n')}\n`;
}
