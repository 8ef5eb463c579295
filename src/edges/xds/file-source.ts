import { type FSWatcher, watch as watchDir } from 'node:fs';
import path from 'node:path';
import type bunyan from 'bunyan';
import type { JsonObject } from '../../../events/config.js';
import { messageType } from '../../bootstrap/schema.js';
import { readConfigFile } from '../../bootstrap/sources.js';
import { unrefTimeout } from './grpc-stream.js';
import { responseShapeError } from './resources.js';
import { judge, type Subscriber, type Transport, type WireResource } from './types.js';

const RESPONSE_TYPE = 'envoy.api.v2.DiscoveryResponse';

/** How long after the last change event the file is read: an editor's or `mv`'s burst of events is one update. */
const SETTLE_MS = 20;

/**
 * A `path` config source: a file holding a `DiscoveryResponse` (JSON, YAML, `.pb` or `.pb_text`),
 * read at once and again whenever it changes. The directory is watched, so an atomic rename
 * over the file (the way to replace it) is seen. There is no one to ACK or NACK: a rejected
 * content is logged and the last good state keeps serving. A file that cannot be read, does
 * not parse, or is not shaped like a DiscoveryResponse is a failed fetch (`update_failure`),
 * as the reference counts it; one that parses but whose resources do not compile is rejected.
 */
export class FileSource implements Transport {
  private subscriber: Subscriber | null = null;
  private watcher: FSWatcher | null = null;
  private timer: NodeJS.Timeout | null = null;
  private lastText: string | null = null;

  constructor(
    private readonly file: string,
    private readonly log: bunyan,
    /** `watched_directory`: any change in it re-reads the file (read again only if it differs). */
    private readonly watchedDirectory?: string,
  ) {}

  watch(_typeUrl: string, _names: string[] | null, subscriber: Subscriber): void {
    const first = this.subscriber === null;
    this.subscriber = subscriber;
    if (!first) return;
    try {
      const directory = this.watchedDirectory ?? path.dirname(this.file);
      this.watcher = watchDir(directory, (_event, name) => {
        if (this.watchedDirectory !== undefined || name === path.basename(this.file)) this.readSoon();
      });
      this.watcher.unref();
    } catch (err) {
      this.log.error(
        { err, file: this.file, directory: this.watchedDirectory },
        'xDS file source: cannot watch its directory',
      );
    }
    this.read();
  }

  unwatch(): void {
    this.subscriber = null;
  }

  close(): void {
    this.subscriber = null;
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
    const subscriber = this.subscriber;
    if (!subscriber) return;
    const parsed = readConfigFile(this.file, RESPONSE_TYPE);
    const json = parsed.ok ? parsed.json : undefined;
    const shape = parsed.ok ? responseShapeError(json) : null;
    const failure = parsed.ok ? (shape === null ? null : `${this.file}: ${shape}`) : parsed.error;
    if (failure !== null) {
      // The next good content is a new update, even if it is the one accepted before.
      this.lastText = null;
      this.log.warn({ file: this.file }, `xDS file source not read: ${failure}`);
      subscriber.onFailure(failure);
      return;
    }
    const text = JSON.stringify(json);
    if (text === this.lastText) return;
    this.lastText = text;
    const update = parsed.ok && parsed.binary ? withWireResources(json as JsonObject, parsed.binary) : json;
    judge(subscriber, update, (error) => {
      if (error !== null) this.log.warn({ file: this.file }, `xDS file source rejected: ${error}`);
    });
  }
}

/**
 * A `.pb` response with its resources as the `Any`s they are in the file, so that decoding them
 * finds the field numbers their types lack (counted, logged, refused with
 * `--reject-unknown-dynamic-fields`) as it does a gRPC response's; their JSON has lost them.
 */
function withWireResources(json: JsonObject, bytes: Uint8Array): JsonObject {
  const decoded = messageType(RESPONSE_TYPE).decode(bytes) as unknown as { resources?: WireResource[] };
  const resources = (decoded.resources ?? []).map(({ type_url, value }) => ({
    type_url,
    value: value instanceof Uint8Array ? value : new Uint8Array(0),
  }));
  return { ...json, resources } as unknown as JsonObject;
}
