import { closeSync, constants, fchmodSync, fstatSync, openSync, type Stats, statSync } from 'node:fs';

/** Owner read and write only: the log records every change of configuration. */
const FILE_MODE = 0o600;

function kindOf(stats: Stats): string {
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return 'a device';
  if (stats.isDirectory()) return 'a directory';
  if (stats.isSocket()) return 'a socket';
  return 'something else';
}

/**
 * Opens the event log at `path` to read its tail or to append (creating it with mode 0600),
 * and refuses anything but a regular file, naming what it is. The log is read back (its last
 * sequence number, a torn line cut off, `proxy replay`) and narrowed to 0600, neither of which
 * a FIFO or a device allows: opening a FIFO with no writer blocked the process before it
 * started, and a link to `/dev/null` made the machine's `/dev/null` mode 0600. Non-blocking,
 * so a FIFO is told apart at once.
 */
export function openLogFile(path: string, how: 'read' | 'append'): number {
  const flags =
    how === 'read' ? constants.O_RDONLY : constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT;
  let fd: number;
  try {
    fd = openSync(path, flags | constants.O_NONBLOCK, FILE_MODE);
  } catch (err) {
    // A FIFO with no reader (or a socket) refuses a non-blocking open for writing.
    if ((err as NodeJS.ErrnoException).code === 'ENXIO') throw notRegular(path, kindOf(statSync(path)));
    throw err;
  }
  const stats = fstatSync(fd);
  if (!stats.isFile()) {
    closeSync(fd);
    throw notRegular(path, kindOf(stats));
  }
  return fd;
}

function notRegular(path: string, kind: string): Error {
  return new Error(`event log ${path} is ${kind}, not a regular file`);
}

/** `openLogFile(path, 'append')`, and an existing file narrowed to 0600 (one created before, or by hand). */
export function openPrivate(path: string): number {
  const fd = openLogFile(path, 'append');
  try {
    fchmodSync(fd, FILE_MODE);
  } catch {
    // Not the owner: the mode is the owner's choice.
  }
  return fd;
}
