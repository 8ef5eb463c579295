import type { JsonObject } from '../../events/index.js';
import { fieldPath, type Report } from './report.js';

/**
 * What a compile step does with each field of one message: `act` (this build honours it),
 * `advise` (advisory only: accepted with one warning at load), or a refusal message saying
 * which later work makes it act. A field present in the config but absent from the table is
 * refused too, so a field nobody wired up can never be silently ignored.
 */
export type FieldRule = 'act' | 'advise' | { refuse: string };

export type FieldTable = Readonly<Record<string, FieldRule>>;

/** Checks every present field of `message` against its table. */
export function checkFields(
  message: JsonObject,
  path: string,
  report: Report,
  table: FieldTable,
  what: string,
): void {
  for (const key of Object.keys(message)) {
    if (key === '@type') continue;
    const rule = Object.hasOwn(table, key) ? table[key] : undefined;
    const here = fieldPath(path, key);
    if (rule === 'act') continue;
    if (rule === 'advise') {
      report.warn(here, `${what}.${key} is accepted but has no effect in this build`, `${what}.${key}`);
    } else if (rule === undefined) {
      report.unsupported(here, `${what}.${key} is not implemented`);
    } else {
      report.unsupported(here, rule.refuse);
    }
  }
}

/** Table shorthand: every listed field acts. */
export function acting(...fields: string[]): Record<string, FieldRule> {
  return Object.fromEntries(fields.map((f) => [f, 'act' as const]));
}

/** The refusal of a field that a later piece of work makes act. */
export function notYet(what: string): FieldRule {
  return { refuse: `${what} is not implemented` };
}
