import { isDraft } from 'immer';

/**
 * Records keyed by names users choose (clusters, listeners, runtime keys, loggers) stay
 * ordinary objects, so a snapshot survives JSON, structuredClone and IPC unchanged. Two
 * names need care: one like `constructor` or `toString` reads Object.prototype where the
 * record has no entry, and assigning `__proto__` changes the prototype instead of adding an
 * entry (and an immer draft refuses it). Reducers read and write these records through the
 * two functions below; views and edges that look a name up use `entryOf`.
 */

/** The record's own entry for `name`, never something inherited from Object.prototype. */
export function entryOf<V>(record: Readonly<Record<string, V>>, name: string): V | undefined {
  return Object.hasOwn(record, name) ? record[name] : undefined;
}

/**
 * Sets `record[name]` and returns the record to keep: the same one, except that `__proto__`
 * on a draft or frozen record needs a copy to hold it as an own property. Assign the result
 * back (`draft.clusters = withEntry(draft.clusters, name, entry)`).
 */
export function withEntry<V>(record: Record<string, V>, name: string, value: V): Record<string, V> {
  if (name !== '__proto__') {
    record[name] = value;
    return record;
  }
  // Spreading a draft hands out drafts of its entries, so later edits in the same produce still land.
  const target = isDraft(record) || Object.isFrozen(record) ? { ...record } : record;
  return Object.defineProperty(target, name, { value, enumerable: true, writable: true, configurable: true });
}
