import type { LogLevel } from '../../events/logging.js';

/** Level names as `/logging` and `-l` print them, most verbose first. */
export const LEVEL_NAMES: readonly LogLevel[] = [
  'trace',
  'debug',
  'info',
  'warning',
  'error',
  'critical',
  'off',
];

/** spdlog's one-letter level names, printed by the `%L` log format flag. */
export const SHORT_LEVEL: Readonly<Record<LogLevel, string>> = {
  trace: 'T',
  debug: 'D',
  info: 'I',
  warning: 'W',
  error: 'E',
  critical: 'C',
  off: 'O',
};

/**
 * Bunyan's numeric level for each name. `off` is above bunyan's fatal (60), so nothing
 * is emitted.
 */
export const BUNYAN_LEVEL: Readonly<Record<LogLevel, number>> = {
  trace: 10,
  debug: 20,
  info: 30,
  warning: 40,
  error: 50,
  critical: 60,
  off: 70,
};

/** The level name of a bunyan level number (the nearest name at or below it). */
export function levelName(bunyanLevel: number): LogLevel {
  let name: LogLevel = 'trace';
  for (const candidate of LEVEL_NAMES) if (BUNYAN_LEVEL[candidate] <= bunyanLevel) name = candidate;
  return name;
}

/** An exact level name, as `/logging` accepts them (no `warn`). */
export function isLevelName(text: string): text is LogLevel {
  return (LEVEL_NAMES as readonly string[]).includes(text);
}

/** A level as the command line accepts it: the exact names plus the alias `warn`. */
export function parseCliLevel(text: string): LogLevel | null {
  if (text === 'warn') return 'warning';
  return isLevelName(text) ? text : null;
}
