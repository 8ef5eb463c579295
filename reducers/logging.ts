import type { Draft } from 'immer';
import type { On } from './on.js';
import type { State } from './state.js';

export function onLevelsChanged(draft: Draft<State>, env: On<'logging/levels-changed'>): void {
  Object.assign(draft.logging.levels, env.event.levels);
}
