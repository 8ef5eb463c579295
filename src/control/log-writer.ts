import { closeSync, fstatSync, ftruncateSync, write, writeSync } from 'node:fs';
import { openPrivate } from './log-file.js';

/** Buffered bytes that trigger a flush before the interval is up. */
const FLUSH_BYTES = 1 << 20;
/**
 * Lines a failing file may owe before they are given up: past this, what the file misses is
 * replaced by a fresh header and checkpoint once it takes writes again (`WriterHooks.resync`).
 */
const MAX_OWED_BYTES = 16 << 20;

export interface WriterHooks {
  /** The first write of a failure streak failed (a full disk, an I/O error). */
  onError(err: Error): void;
  /** A write succeeded after a failure streak: the file holds every line again. */
  onRecovered(): void;
  /** Lines that stand for everything appended so far (a header and a checkpoint), written after lines were given up. */
  resync(): string;
}

/**
 * An append-only ndjson file written off the event loop's critical path: lines are
 * buffered and written with one asynchronous `write` per flush, each call holding whole
 * lines only. One write is in flight at a time, which keeps the lines in order.
 *
 * A write that fails (ENOSPC, EIO) never leaves a torn line for the next to be glued to: the
 * file is cut back to its last whole line, and the lines are kept and written again, first,
 * by the next flush, so once the disk takes writes again the file holds every line, in order.
 * `failure` says meanwhile that the file is behind. Past `MAX_OWED_BYTES` the owed lines are
 * given up and `hooks.resync()` stands for them when the file recovers.
 */
export class LogWriter {
  private fd: number;
  private buffer: string[] = [];
  private bytes = 0;
  private inFlight: Promise<void> | null = null;
  /** The error of the last write while the file is behind, null when it holds every line. */
  private failed: Error | null = null;
  /** Bytes of whole lines in the file: where the next write starts. */
  private size: number;
  /** Lines a failed write did not get into the file: written first by the next flush. */
  private owed: Buffer | null = null;
  /** Lines were given up: the next write starts with `hooks.resync()` instead. */
  private gaveUp = false;
  /** A cut back to `size` failed: tried again before anything is written. */
  private torn = false;

  constructor(
    readonly path: string,
    private readonly hooks: WriterHooks,
  ) {
    this.fd = openPrivate(path);
    this.size = fstatSync(this.fd).size;
  }

  /** Why the file is behind what was appended (the last write's error), or null. */
  get failure(): Error | null {
    return this.failed;
  }

  /** Queues whole lines (each ending in a newline). */
  append(lines: string): void {
    // After giving up, the resync lines stand for these too.
    if (this.gaveUp) return;
    this.buffer.push(lines);
    this.bytes += lines.length;
    if (this.bytes >= FLUSH_BYTES) void this.flush();
  }

  /** Starts writing what is buffered; resolves when everything queued so far was tried (see `failure`). */
  flush(): Promise<void> {
    if (this.inFlight) return this.inFlight.then(() => this.flush());
    const data = this.take();
    if (!data) return Promise.resolve();
    this.inFlight = this.write(data).finally(() => {
      this.inFlight = null;
    });
    return this.inFlight;
  }

  /** What the next write holds: owed lines (or the resync lines) first, then the buffer. */
  private take(): Buffer | null {
    if (this.gaveUp) {
      this.gaveUp = false;
      this.buffer = [this.hooks.resync()];
    }
    if (this.buffer.length === 0 && !this.owed) return null;
    const data = Buffer.concat([this.owed ?? Buffer.alloc(0), Buffer.from(this.buffer.join(''))]);
    this.buffer = [];
    this.bytes = 0;
    this.owed = null;
    return data;
  }

  private async write(data: Buffer): Promise<void> {
    try {
      this.cutTornTail();
      await writeAll(this.fd, data);
      this.checkLinked();
      this.written(data.length);
    } catch (err) {
      this.failedWrite(data, err as Error);
    }
  }

  private written(length: number): void {
    this.size += length;
    if (!this.failed) return;
    this.failed = null;
    this.hooks.onRecovered();
  }

  private failedWrite(data: Buffer, err: Error): void {
    // Part of `data` may be in the file, its last line torn: cut it off; all of it is owed.
    try {
      ftruncateSync(this.fd, this.size);
    } catch {
      this.torn = true;
    }
    if (data.length + this.bytes > MAX_OWED_BYTES) {
      this.gaveUp = true;
      this.buffer = [];
      this.bytes = 0;
    } else this.owed = data;
    if (!this.failed) this.hooks.onError(err);
    this.failed = err;
  }

  /**
   * A file removed while open (its directory too) takes writes into an inode nothing names,
   * lost when the process ends: that is a failed write, not lines on disk.
   */
  private checkLinked(): void {
    if (fstatSync(this.fd).nlink === 0)
      throw new Error(`${this.path} was removed; /reopen_logs (or SIGUSR1) opens a new one`);
  }

  private cutTornTail(): void {
    if (!this.torn) return;
    ftruncateSync(this.fd, this.size);
    this.torn = false;
  }

  /** Writes what is buffered synchronously; only safe when no asynchronous write is in flight. */
  flushSync(): boolean {
    if (this.inFlight) return false;
    const data = this.take();
    if (!data) return true;
    try {
      this.cutTornTail();
      let offset = 0;
      while (offset < data.length) offset += writeSync(this.fd, data, offset);
      this.checkLinked();
      this.written(data.length);
    } catch (err) {
      this.failedWrite(data, err as Error);
    }
    return true;
  }

  /**
   * Flushes, then closes the file and opens `path` again (the old file may have been moved
   * away). Lines still owed are dropped: the caller's header and checkpoint stand for them.
   */
  async reopen(): Promise<void> {
    await this.flush();
    // A write started while that flush settled (an append past the flush size, an admin
    // mutation's flush) still holds the old descriptor: closing it under that write failed it
    // with EBADF, or, were the number taken meanwhile, put its lines into another file or socket.
    while (this.inFlight) await this.inFlight;
    // The new file first: when it cannot be opened, the old one is still written (a closed
    // descriptor's number is soon another file's or socket's).
    const fd = openPrivate(this.path);
    closeSync(this.fd);
    this.fd = fd;
    this.size = fstatSync(this.fd).size;
    this.torn = false;
    this.owed = null;
    this.gaveUp = false;
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
