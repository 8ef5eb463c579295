import { closeSync, constants, openSync, statSync, writeSync } from 'node:fs';

/**
 * What an append-only log (an access log, `--log-path`) may hold unwritten: lines a FIFO's
 * reader has not taken yet, or lines a full disk refused. Past it new lines are dropped.
 */
export const MAX_PENDING_BYTES = 1024 * 1024;

/**
 * Opens `path` for appending without ever blocking the thread. A FIFO is opened read-write,
 * as the reference opens its log files: a write-only open waits for a reader (the whole
 * process stopped before serving, SIGTERM included), a read-write one never does, and its
 * lines wait in the pipe until a reader comes. Everything is non-blocking, so a full pipe is
 * EAGAIN, never a stalled thread. Throws what `open(2)` throws.
 */
export function openAppend(path: string): number {
  const fifo = statSync(path, { throwIfNoEntry: false })?.isFIFO() === true;
  const access = fifo ? constants.O_RDWR : constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT;
  return openSync(path, access | constants.O_NONBLOCK, 0o666);
}

/**
 * An append-only file written by whole chunks of lines that never blocks nor throws: what a
 * full pipe (EAGAIN) or a failing disk (ENOSPC, EIO) does not take waits, up to
 * `MAX_PENDING_BYTES`, and goes out first on the next write; past that, chunks are dropped.
 * A failure and the recovery are each said once (on stderr by default), naming the file: a throw
 * from a flush timer ended the process, and one line per failed flush would flood the log.
 */
export class AppendFile {
  private fd: number | null;
  private pending: Buffer = Buffer.alloc(0);
  private failure: string | null = null;
  private dropped = 0;

  /** Opens `path` (see `openAppend`); throws when it cannot. `say` tells of failures (stderr). */
  constructor(
    readonly path: string,
    private readonly what: string,
    private readonly say: (message: string) => void = (message) => process.stderr.write(`${message}\n`),
  ) {
    this.fd = openAppend(path);
  }

  /** Appends `text` after what is pending. */
  write(text: string): void {
    if (text.length > 0) {
      if (this.pending.length + Buffer.byteLength(text) > MAX_PENDING_BYTES) {
        this.dropped += Buffer.byteLength(text);
        this.fail('more than 1 MiB is waiting: dropping lines');
      } else
        this.pending =
          this.pending.length === 0 ? Buffer.from(text) : Buffer.concat([this.pending, Buffer.from(text)]);
    }
    this.drain();
  }

  /**
   * Closes the file and opens its path again (a rotation renamed it away); pending lines go to
   * the new file. When the path cannot be opened, lines wait until a later reopen succeeds.
   */
  reopen(): void {
    this.drain();
    this.closeFd();
    try {
      this.fd = openAppend(this.path);
    } catch (err) {
      this.fail(`cannot reopen: ${(err as Error).message}`);
      return;
    }
    this.drain();
  }

  /** Writes what it can of the pending lines, then closes. */
  close(): void {
    this.drain();
    this.closeFd();
  }

  private closeFd(): void {
    if (this.fd === null) return;
    try {
      closeSync(this.fd);
    } catch {
      // Closed is closed: a failed close still frees the descriptor.
    }
    this.fd = null;
  }

  private drain(): void {
    if (this.fd === null || this.pending.length === 0) return;
    let off = 0;
    try {
      while (off < this.pending.length) off += writeSync(this.fd, this.pending, off);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      this.pending = this.pending.subarray(off);
      // A full pipe is a reader behind, not a failure: the rest goes on the next write.
      if (code !== 'EAGAIN') this.fail(`cannot write: ${(err as Error).message}`);
      return;
    }
    this.pending = Buffer.alloc(0);
    if (this.failure !== null) {
      const lost = this.dropped > 0 ? `; ${this.dropped} bytes of lines were dropped` : '';
      this.say(`${this.what} '${this.path}': writing again${lost}`);
      this.failure = null;
      this.dropped = 0;
    }
  }

  private fail(why: string): void {
    if (this.failure !== null) return;
    this.failure = why;
    this.say(
      `${this.what} '${this.path}': ${why}; up to 1 MiB of lines wait for the next write, later ones are dropped`,
    );
  }
}
