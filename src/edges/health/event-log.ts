import type { JsonObject } from '../../../events/index.js';
import { AppendFile } from '../../append-file.js';

/**
 * An append-only file of JSON lines (the reference's health check and outlier event logs),
 * opened at the first line, written as access logs are (`AppendFile`): a FIFO never blocks, and
 * lines a full disk refused wait (up to 1 MiB) and go out once it takes writes again. `say`
 * tells of a failure and of the recovery. It was a write stream, which one ENOSPC ended for the
 * life of the process.
 */
export class JsonLinesLog {
  private file: AppendFile | null = null;
  private failed = false;

  constructor(
    readonly path: string,
    private readonly say: (message: string) => void,
  ) {}

  write(record: JsonObject): void {
    if (this.failed) return;
    if (!this.file) {
      try {
        this.file = new AppendFile(this.path, 'event log', this.say);
      } catch (err) {
        this.failed = true;
        this.say(`event log '${this.path}': cannot open: ${(err as Error).message}; no lines are written`);
        return;
      }
    }
    this.file.write(`${JSON.stringify(record)}\n`);
  }

  close(): void {
    this.file?.close();
    this.file = null;
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

  constructor(private readonly say: (message: string) => void) {}

  /** Writes `HealthCheckEvent` lines about one host, stamped with the time of each. */
  writerFor(
    path: string,
    kind: keyof typeof CHECKER_TYPE,
    cluster: string,
    host: { readonly ip: string; readonly port: number },
  ): (event: JsonObject) => void {
    let log = this.logs.get(path);
    if (!log) {
      log = new JsonLinesLog(path, this.say);
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
