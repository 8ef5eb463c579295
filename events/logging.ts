import { defineEvent } from './define.js';

export type LogLevel = 'trace' | 'debug' | 'info' | 'warning' | 'error' | 'critical' | 'off';

/** `POST /logging` or start-up options: new levels for the named loggers. */
export const logLevelsChanged = defineEvent('logging/levels-changed').withPayload<{
  levels: Record<string, LogLevel>;
}>();
