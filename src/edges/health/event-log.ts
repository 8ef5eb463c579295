import { createWriteStream, type WriteStream } from 'node:fs';
import type { JsonObject } from '../../../events/index.js';

/**
 * An append-only file of JSON lines (the reference's health check and outlier event logs),
 * opened at the first line. A file that cannot be written is reported once through `onError`
 * and written no more.
 */
export class JsonLinesLog {
  private stream: WriteStream | null = null;
  private failed = false;

  constructor(
    readonly path: string,
    private readonly onError: (err: Error) => void,
  ) {}

  write(record: JsonObject): void {
    if (this.failed) return;
    if (!this.stream) {
      this.stream = createWriteStream(this.path, { flags: 'a' });
      this.stream.on('error', (err) => {
        this.failed = true;
        this.onError(err);
      });
    }
    this.stream.write(`${JSON.stringify(record)}\n`);
  }

  close(): void {
    this.stream?.end();
    this.stream = null;
  }
}
