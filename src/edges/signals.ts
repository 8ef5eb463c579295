import { reopenAccessLogs } from '../dataplane/access-log/file-sink.js';

/**
 * SIGUSR1 reopens this process's access log files (rotation): an edge, started with the
 * primary's others. Only the main thread hears signals: with --concurrency > 1 the worker pool
 * tells the worker threads to reopen theirs. The loggers and the event log hook the same signal
 * where they are opened, before any edge starts (a SIGUSR1 nobody listens to would start Node's
 * inspector). Returns the unhook.
 */
export function reopenAccessLogsOnSignal(): () => void {
  process.on('SIGUSR1', reopenAccessLogs);
  return () => process.off('SIGUSR1', reopenAccessLogs);
}
