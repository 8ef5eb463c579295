import { closeSync, fchmodSync, openSync, write, writeSync } from 'node:fs';

/** Buffered bytes that trigger a flush before the interval is up. */
const FLUSH_BYTES = 1 << 20;
/** Owner read and write only: the log records every change of configuration. */
const FILE_MODE = 0o600;

/**
 * Opens `path` for appending with mode 0600, and narrows an existing file to 0600 too (one
 * created before, or by hand); a file this process does not own keeps its mode.
 */
function openPrivate(path: string): number {
  const fd = openSync(path, 'a', FILE_MODE);
  try {
    fchmodSync(fd, FILE_MODE);
  } catch {
    // Not the owner: the mode is the owner's choice.
  }
  return fd;
}

/**
 * An append-only ndjson file written off the event loop's critical path: lines are
 * buffered and written with one asynchronous `write` per flush, each call holding whole
 * lines only, so a crash loses at most the unflushed tail and never tears an earlier line.
 * One write is in flight at a time, which keeps the lines in order.
 */
export class LogWriter {
  private fd: number;
  private buffer: string[] = [];
  private bytes = 0;
  private inFlight: Promise<void> | null = null;
  private failed: Error | null = null;

  constructor(
    readonly path: string,
    private readonly onError: (err: Error) => void,
  ) {
    this.fd = openPrivate(path);
  }

  /** Queues whole lines (each ending in a newline). */
  append(lines: string): void {
    this.buffer.push(lines);
    this.bytes += lines.length;
    if (this.bytes >= FLUSH_BYTES) void this.flush();
  }

  /** Starts writing what is buffered; resolves when everything queued so far is written. */
  flush(): Promise<void> {
    if (this.inFlight) return this.inFlight.then(() => this.flush());
    if (this.buffer.length === 0) return Promise.resolve();
    const data = Buffer.from(this.buffer.join(''));
    this.buffer = [];
    this.bytes = 0;
    this.inFlight = writeAll(this.fd, data)
      .catch((err: Error) => {
        // Report once per failure streak; the data plane keeps running without the log.
        if (!this.failed) this.onError(err);
        this.failed = err;
      })
      .finally(() => {
        this.inFlight = null;
      });
    return this.inFlight;
  }

  /** Writes what is buffered synchronously; only safe when no asynchronous write is in flight. */
  flushSync(): boolean {
    if (this.inFlight) return false;
    if (this.buffer.length > 0) {
      const data = Buffer.from(this.buffer.join(''));
      this.buffer = [];
      this.bytes = 0;
      let offset = 0;
      while (offset < data.length) offset += writeSync(this.fd, data, offset);
    }
    return true;
  }

  /** Flushes, then closes the file and opens `path` again (the old file may have been moved away). */
  async reopen(): Promise<void> {
    await this.flush();
    closeSync(this.fd);
    this.fd = openPrivate(this.path);
    this.failed = null;
  }

  async close(): Promise<void> {
    await this.flush();
    closeSync(this.fd);
  }
}

function writeAll(fd: number, data: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const step = (offset: number) => {
      write(fd, data, offset, data.length - offset, null, (err, written) => {
        if (err) return reject(err);
        if (offset + written < data.length) return step(offset + written);
        resolve();
      });
    };
    step(0);
  });
}
