import type { LogLevel } from '../../events/logging.js';
import { parseCliLevel } from './levels.js';
import { LOGGER_NAMES } from './names.js';

export type ComponentLevels =
  | { ok: true; levels: Record<string, LogLevel> }
  | { ok: false; errors: string[] };

/**
 * Parses `--component-log-level` (`upstream:debug,config:trace`): every component must be
 * a known logger name and every level a CLI level name (`warn` accepted).
 */
export function parseComponentLevels(text: string): ComponentLevels {
  const levels: Record<string, LogLevel> = {};
  const errors: string[] = [];
  for (const item of text.split(',')) {
    const parts = item.split(':');
    if (parts.length !== 2) {
      errors.push(
        `component log level not correctly specified '${item}' (--component-log-level takes component:level,...)`,
      );
      continue;
    }
    const [component, levelText] = parts as [string, string];
    const level = parseCliLevel(levelText);
    if (!LOGGER_NAMES.includes(component)) {
      errors.push(
        `invalid component specified '${component}' in --component-log-level (known: ${LOGGER_NAMES.join(' ')})`,
      );
    } else if (!level) {
      errors.push(`invalid log level specified '${levelText}' in --component-log-level for '${component}'`);
    } else levels[component] = level;
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, levels };
}
