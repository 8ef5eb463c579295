import { AppendFile } from '../append-file.js';

/** Where formatted log lines go. */
export interface LogSink {
  write(line: string): void;
  /** Closes and opens the file again, so a rotated-away file is let go (SIGUSR1). */
  reopen(): void;
  flush(): void;
  close(): void;
}

/** Unbuffered stderr: lines appear at once and interleave correctly with crashes. */
export function stderrSink(): LogSink {
  return {
    write: (line) => process.stderr.write(line),
    reopen: () => {},
    flush: () => {},
    close: () => {},
  };
}

/** Flush early when this much is buffered, as a full buffer flushes in the reference. */
const FLUSH_BYTES = 64 * 1024;

/**
 * An append-only log file written through a buffer that is flushed every
 * `flushIntervalMs` (`--file-flush-interval-msec`), when it fills, on reopen and at exit.
 * Throws when the file cannot be opened at start; a failed write or reopen is said on stderr
 * and the lines wait (up to 1 MiB) for a later one (`AppendFile`: never blocks, never throws).
 */
export function fileSink(path: string, flushIntervalMs: number): LogSink {
  const file = new AppendFile(path, 'log file');
  let buffered: string[] = [];
  let bytes = 0;
  const flush = () => {
    if (buffered.length === 0) return;
    const chunk = buffered.join('');
    buffered = [];
    bytes = 0;
    file.write(chunk);
  };
  const timer = setInterval(flush, Math.max(1, flushIntervalMs));
  timer.unref();
  process.on('exit', flush);
  return {
    write(line) {
      buffered.push(line);
      bytes += line.length;
      if (bytes >= FLUSH_BYTES) flush();
    },
    reopen() {
      flush();
      file.reopen();
    },
    flush,
    close() {
      flush();
      clearInterval(timer);
      process.off('exit', flush);
      file.close();
    },
  };
}
