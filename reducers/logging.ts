import type { Draft } from 'immer';
import { withEntry } from './names.js';
import type { On } from './on.js';
import type { State } from './state.js';

export function onLevelsChanged(draft: Draft<State>, env: On<'logging/levels-changed'>): void {
  for (const [name, level] of Object.entries(env.event.levels)) {
    draft.logging.levels = withEntry(draft.logging.levels, name, level);
  }
}
