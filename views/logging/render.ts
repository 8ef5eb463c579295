import type { LogLevel } from '../../events/index.js';
import type { State } from '../../reducers/state.js';
import { text, type ViewResult } from '../result.js';

/**
 * The loggers with their levels as the snapshot holds them: the registry's loggers in its
 * order (its own level where the snapshot has none), then any other the snapshot knows.
 */
export function loggerLevels(
  state: State,
  registry: ReadonlyArray<{ name: string; level: LogLevel }>,
): Array<[string, LogLevel]> {
  const known = new Set(registry.map((l) => l.name));
  const extra = Object.keys(state.logging.levels).filter((n) => !known.has(n));
  return [
    ...registry.map(({ name, level }): [string, LogLevel] => [name, state.logging.levels[name] ?? level]),
    ...extra.map((name): [string, LogLevel] => [name, state.logging.levels[name]!]),
  ];
}

/** `active loggers:` then `  <name>: <level>` per logger. */
export function activeLoggers(levels: ReadonlyArray<[string, LogLevel]>): string {
  return `active loggers:\n${levels.map(([n, l]) => `  ${n}: ${l}\n`).join('')}`;
}

/** The usage text `/logging` answers a bad request with, followed by the listing. */
export function loggingUsage(
  levelNames: readonly string[],
  levels: ReadonlyArray<[string, LogLevel]>,
): ViewResult {
  return text(
    'usage: /logging?<name>=<level> (change single level)\n' +
      'usage: /logging?level=<level> (change all levels)\n' +
      'usage: /logging?paths=<name1>=<level1>,<name2>=<level2> (change several levels)\n' +
      `levels: ${levelNames.join(' ')} \n${activeLoggers(levels)}`,
    400,
  );
}
