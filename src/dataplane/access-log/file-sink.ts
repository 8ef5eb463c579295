import { AppendFile } from '../../append-file.js';

/** One open access log file, shared by every logger of this process that names its path. */
export interface AccessLogFile {
  readonly path: string;
  /** Queues whole lines; they reach the file on the next flush. */
  write(lines: string): void;
  flush(): void;
  /** Gives up one holder's share; the file closes (flushed) when the last lets go. */
  release(): void;
}

/** Flush early when this much is buffered, as a full buffer flushes in the reference. */
const FLUSH_BYTES = 64 * 1024;

interface OpenFile {
  file: AppendFile | null;
  /** The process's stdout or stderr (the stream loggers): written through, never opened or closed. */
  stream?: NodeJS.WriteStream;
  chunks: string[];
  bytes: number;
  holders: number;
  timer: NodeJS.Timeout;
}

const files = new Map<string, OpenFile>();

/** Writes everything buffered in one `write(2)`; with O_APPEND each lands whole at the end. */
function flushFile(f: OpenFile): void {
  if (f.stream && f.chunks.length > 0) {
    // Node's own stream: a write(2) on a non-blocking pipe could fail with EAGAIN.
    f.stream.write(f.chunks.join(''));
    f.chunks = [];
    f.bytes = 0;
    return;
  }
  if (f.file === null || f.chunks.length === 0) return;
  const data = f.chunks.length === 1 ? (f.chunks[0] as string) : f.chunks.join('');
  f.chunks = [];
  f.bytes = 0;
  f.file.write(data);
}

function flushAll(): void {
  for (const f of files.values()) flushFile(f);
}

/**
 * Closes and opens every access log file again, so a file renamed away by a rotation is let
 * go; lines buffered before go to the old file, every later one to the new. SIGUSR1 and
 * `POST /reopen_logs` call this. A file that cannot be opened keeps up to 1 MiB of lines
 * until a later reopen succeeds (`AppendFile`).
 */
export function reopenAccessLogs(): void {
  for (const f of files.values()) {
    flushFile(f);
    f.file?.reopen();
  }
}

/** Flushes every access log file of this process now (tests, shutdown). */
export function flushAccessLogs(): void {
  flushAll();
}

/**
 * Flushes this thread's access log files when it exits, however it exits (the primary's edges
 * and each worker thread start it), so no buffered line is lost. The unhook flushes: it runs
 * as a shutdown step, after the listeners that write the lines have closed.
 */
export function flushAccessLogsAtExit(): () => void {
  process.on('exit', flushAll);
  return () => {
    process.off('exit', flushAll);
    flushAll();
  };
}

/**
 * Opens (or shares) the access log file at `path` for appending (O_APPEND: several workers
 * appending to one file never overwrite each other, and each flush is one write of whole
 * lines). Buffered lines are written every `flushIntervalMs` (`--file-flush-interval-msec`),
 * when 64 KiB are waiting, on reopen and at exit. Throws when the file cannot be opened.
 */
export function openAccessLogFile(path: string, flushIntervalMs: number): AccessLogFile {
  return share(path, flushIntervalMs, () => ({ file: new AppendFile(path, 'access log') }));
}

/**
 * The stdout or stderr access logger's sink (the reference's StdoutAccessLog and
 * StderrAccessLog): the process's own stream, buffered and flushed as the files are. A
 * worker thread's stdout and stderr are forwarded to the process's by Node.
 */
export function openAccessLogStream(which: 'stdout' | 'stderr', flushIntervalMs: number): AccessLogFile {
  return share(`<${which}>`, flushIntervalMs, () => ({ file: null, stream: process[which] }));
}

/** The shared entry of `path` (opened by `open` for its first holder), with one more holder. */
function share(
  path: string,
  flushIntervalMs: number,
  open: () => Pick<OpenFile, 'file' | 'stream'>,
): AccessLogFile {
  let f = files.get(path);
  if (!f) {
    const target = open();
    const timer = setInterval(
      () => {
        const open = files.get(path);
        if (open) flushFile(open);
      },
      Math.max(1, flushIntervalMs),
    );
    timer.unref();
    f = { ...target, chunks: [], bytes: 0, holders: 0, timer };
    files.set(path, f);
  }
  const file = f;
  file.holders += 1;
  let released = false;
  return {
    path,
    write(lines) {
      file.chunks.push(lines);
      file.bytes += lines.length;
      if (file.bytes >= FLUSH_BYTES) flushFile(file);
    },
    flush: () => flushFile(file),
    release() {
      if (released) return;
      released = true;
      file.holders -= 1;
      if (file.holders > 0) return;
      flushFile(file);
      clearInterval(file.timer);
      file.file?.close();
      files.delete(path);
    },
  };
}
