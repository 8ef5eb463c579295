import { closeSync, openSync, writeSync } from 'node:fs';

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
  fd: number | null;
  /** The process's stdout or stderr (the stream loggers): written through, never opened or closed. */
  stream?: NodeJS.WriteStream;
  chunks: string[];
  bytes: number;
  holders: number;
  timer: NodeJS.Timeout;
}

const files = new Map<string, OpenFile>();

/** Writes everything buffered in one `write(2)`; with O_APPEND each lands whole at the end. */
function flushFile(path: string, f: OpenFile): void {
  if (f.stream && f.chunks.length > 0) {
    // Node's own stream: a write(2) on a non-blocking pipe could fail with EAGAIN.
    f.stream.write(f.chunks.join(''));
    f.chunks = [];
    f.bytes = 0;
    return;
  }
  if (f.fd === null || f.chunks.length === 0) return;
  const data = Buffer.from(f.chunks.length === 1 ? (f.chunks[0] as string) : f.chunks.join(''));
  f.chunks = [];
  f.bytes = 0;
  try {
    let off = 0;
    while (off < data.length) off += writeSync(f.fd, data, off);
  } catch (err) {
    process.stderr.write(`cannot write access log '${path}': ${(err as Error).message}\n`);
  }
}

function flushAll(): void {
  for (const [path, f] of files) flushFile(path, f);
}

/**
 * Closes and opens every access log file again, so a file renamed away by a rotation is let
 * go; lines buffered before go to the old file, every later one to the new. SIGUSR1 and
 * `POST /reopen_logs` call this. A file that cannot be opened keeps its lines buffered until
 * a later reopen succeeds.
 */
export function reopenAccessLogs(): void {
  for (const [path, f] of files) {
    flushFile(path, f);
    if (f.stream) continue;
    if (f.fd !== null) closeSync(f.fd);
    f.fd = null;
    try {
      f.fd = openSync(path, 'a');
    } catch (err) {
      process.stderr.write(`cannot reopen access log '${path}': ${(err as Error).message}\n`);
    }
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
  return share(path, flushIntervalMs, () => ({ fd: openSync(path, 'a') }));
}

/**
 * The stdout or stderr access logger's sink (the reference's StdoutAccessLog and
 * StderrAccessLog): the process's own stream, buffered and flushed as the files are. A
 * worker thread's stdout and stderr are forwarded to the process's by Node.
 */
export function openAccessLogStream(which: 'stdout' | 'stderr', flushIntervalMs: number): AccessLogFile {
  return share(`<${which}>`, flushIntervalMs, () => ({ fd: null, stream: process[which] }));
}

/** The shared entry of `path` (opened by `open` for its first holder), with one more holder. */
function share(
  path: string,
  flushIntervalMs: number,
  open: () => Pick<OpenFile, 'fd' | 'stream'>,
): AccessLogFile {
  let f = files.get(path);
  if (!f) {
    const target = open();
    const timer = setInterval(
      () => {
        const open = files.get(path);
        if (open) flushFile(path, open);
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
      if (file.bytes >= FLUSH_BYTES) flushFile(path, file);
    },
    flush: () => flushFile(path, file),
    release() {
      if (released) return;
      released = true;
      file.holders -= 1;
      if (file.holders > 0) return;
      flushFile(path, file);
      clearInterval(file.timer);
      if (file.fd !== null && !file.stream) closeSync(file.fd);
      files.delete(path);
    },
  };
}
