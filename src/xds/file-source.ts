import { type FSWatcher, watch as watchDir } from 'node:fs';
import path from 'node:path';
import type bunyan from 'bunyan';
import type { JsonObject } from '../../events/config.js';
import { readConfigFile } from '../bootstrap/sources.js';
import { unrefTimeout } from './stream.js';
import type { Transport, Update, UpdateHandler } from './types.js';

/** How long after the last change event the file is read: an editor's or `mv`'s burst of events is one update. */
const SETTLE_MS = 20;

/**
 * A `path` config source: a file holding a `DiscoveryResponse` (JSON, YAML, `.pb` or `.pb_text`),
 * read at once and again whenever it changes. The directory is watched, so an atomic rename
 * over the file (the way to replace it) is seen. There is no one to ACK or NACK: a rejected
 * content is logged and the last good state keeps serving.
 */
export class FileSource implements Transport {
  private handler: UpdateHandler | null = null;
  private watcher: FSWatcher | null = null;
  private timer: NodeJS.Timeout | null = null;
  private lastText: string | null = null;

  constructor(
    private readonly file: string,
    private readonly log: bunyan,
  ) {}

  watch(_typeUrl: string, _names: string[] | null, onUpdate: UpdateHandler): void {
    const first = this.handler === null;
    this.handler = onUpdate;
    if (!first) return;
    try {
      this.watcher = watchDir(path.dirname(this.file), (_event, name) => {
        if (name === path.basename(this.file)) this.readSoon();
      });
      this.watcher.unref();
    } catch (err) {
      this.log.error({ err, file: this.file }, 'xDS file source: cannot watch its directory');
    }
    this.read();
  }

  unwatch(): void {
    this.handler = null;
  }

  close(): void {
    this.handler = null;
    this.watcher?.close();
    if (this.timer) clearTimeout(this.timer);
  }

  private readSoon(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = unrefTimeout(SETTLE_MS, () => {
      this.timer = null;
      this.read();
    });
  }

  private read(): void {
    if (!this.handler) return;
    const parsed = readConfigFile(this.file, 'envoy.api.v2.DiscoveryResponse');
    if (!parsed.ok) {
      this.log.warn({ file: this.file }, `xDS file source not read: ${parsed.error}`);
      return;
    }
    const text = JSON.stringify(parsed.json);
    if (text === this.lastText) return;
    this.lastText = text;
    const response = parsed.json as { version_info?: unknown; resources?: unknown };
    const update: Update = {
      version_info: typeof response.version_info === 'string' ? response.version_info : '',
      resources: Array.isArray(response.resources) ? (response.resources as JsonObject[]) : [],
    };
    const error = this.handler(update);
    if (error !== null) this.log.warn({ file: this.file }, `xDS file source rejected: ${error}`);
  }
}
