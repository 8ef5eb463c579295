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

/** The reference's `HealthCheckerType` of each checker kind. */
const CHECKER_TYPE = { http: 'HTTP', tcp: 'TCP', grpc: 'GRPC' } as const;

/**
 * The health check event logs (`event_log_path`), one file a path: checkers of several
 * clusters may share one.
 */
export class HealthCheckEventLogs {
  private readonly logs = new Map<string, JsonLinesLog>();

  constructor(private readonly onError: (err: Error, path: string) => void) {}

  /** Writes `HealthCheckEvent` lines about one host, stamped with the time of each. */
  writerFor(
    path: string,
    kind: keyof typeof CHECKER_TYPE,
    cluster: string,
    host: { readonly ip: string; readonly port: number },
  ): (event: JsonObject) => void {
    let log = this.logs.get(path);
    if (!log) {
      log = new JsonLinesLog(path, (err) => this.onError(err, path));
      this.logs.set(path, log);
    }
    const about = {
      health_checker_type: CHECKER_TYPE[kind],
      host: { socket_address: { protocol: 'TCP', address: host.ip, port_value: host.port } },
      cluster_name: cluster,
    };
    const file = log;
    return (event) => file.write({ ...about, ...event, timestamp: new Date().toISOString() });
  }

  close(): void {
    for (const log of this.logs.values()) log.close();
  }
}
