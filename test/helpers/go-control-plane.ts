/**
 * The real go-control-plane management server (a test tool at /work/shared/tools/xds-server,
 * see its README): v3 only, state of the world and delta, serving a snapshot file it polls.
 * Tests skip where the binary is missing. Its log (one JSON object per line) is kept so tests
 * can wait for a request, an ACK or a NACK.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { replaceFile } from './replace-file.js';

export const GO_CONTROL_PLANE = '/work/shared/tools/xds-server/xds-server';

/** Why tests of go-control-plane are skipped here, or false when the binary is present. */
export const skipGoControlPlane = existsSync(GO_CONTROL_PLANE)
  ? false
  : `go-control-plane test server not found at ${GO_CONTROL_PLANE}`;

export type LogLine = Record<string, unknown> & { event: string };

/** The snapshot file's content: v3 resources in proto3 JSON. */
export interface Snapshot {
  node_id: string;
  version: string;
  clusters?: object[];
  endpoints?: object[];
  listeners?: object[];
  routes?: object[];
  secrets?: object[];
}

export class GoControlPlane {
  readonly log: LogLine[] = [];
  private readonly waiters = new Set<() => void>();

  private constructor(
    private readonly child: ChildProcess,
    private readonly dir: string,
    private readonly file: string,
    readonly port: number,
  ) {}

  /** Starts the server on a free port with `snapshot`; resolves once it listens. */
  static async start(snapshot: Snapshot, flags: string[] = []): Promise<GoControlPlane> {
    const dir = mkdtempSync(join(tmpdir(), 'go-control-plane-'));
    const file = join(dir, 'snapshot.json');
    writeAtomically(file, snapshot);
    const child = spawn(GO_CONTROL_PLANE, ['-port', '0', '-snapshot', file, '-poll', '50ms', ...flags], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stderr?.resume();
    const lines: LogLine[] = [];
    let onLine: (line: LogLine) => void = (line) => lines.push(line);
    createInterface({ input: child.stdout! }).on('line', (text) => {
      try {
        onLine(JSON.parse(text) as LogLine);
      } catch {
        // Not a log object: nothing to wait for.
      }
    });
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error('go-control-plane did not listen within 10 s')),
        10_000,
      );
      child.once('exit', (code) => reject(new Error(`go-control-plane exited with ${code}`)));
      onLine = (line) => {
        lines.push(line);
        if (line.event === 'listening') {
          clearTimeout(timer);
          resolve(Number(line.port));
        }
      };
    });
    const server = new GoControlPlane(child, dir, file, port);
    server.log.push(...lines);
    onLine = (line) => {
      server.log.push(line);
      for (const wake of server.waiters) wake();
      server.waiters.clear();
    };
    return server;
  }

  /** Replaces the snapshot (the server polls the file). */
  set(snapshot: Snapshot): void {
    writeAtomically(this.file, snapshot);
  }

  /** The first log line from index `from` on matching, waiting up to `timeoutMs`. */
  async waitFor(match: (line: LogLine) => boolean, timeoutMs = 15_000, from = 0): Promise<LogLine> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.log.slice(from).find(match);
      if (hit) return hit;
      if (Date.now() > deadline)
        throw new Error(
          `no matching go-control-plane log line within ${timeoutMs} ms; last:\n${this.log
            .slice(-10)
            .map((l) => JSON.stringify(l))
            .join('\n')}`,
        );
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 100);
        this.waiters.add(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** A state-of-the-world ACK of `version` for a type URL ending in `type`, from log line `from` on. */
  ack(type: string, version: string, timeoutMs?: number, from = 0): Promise<LogLine> {
    return this.waitFor(
      (l) =>
        l.event === 'request' &&
        String(l.type_url).endsWith(type) &&
        l.version_info === version &&
        l.response_nonce !== '' &&
        l.error_detail !== true,
      timeoutMs,
      from,
    );
  }

  /**
   * The proxy's answer to the first delta response from log line `from` on that `response`
   * matches: its ACK; a NACK fails, naming `what` and the proxy's error message.
   */
  async deltaAck(
    what: string,
    response: (line: LogLine) => boolean,
    from: number,
    timeoutMs = 30_000,
  ): Promise<LogLine> {
    const sent = await this.waitFor((l) => l.event === 'delta_response' && response(l), timeoutMs, from);
    const answer = await this.waitFor(
      (l) => l.event === 'delta_request' && l.stream === sent.stream && l.response_nonce === sent.nonce,
      timeoutMs,
      from,
    );
    assert.notEqual(answer.error_detail, true, `${what} NACKed: ${String(answer.error_message)}`);
    return answer;
  }

  async stop(): Promise<void> {
    // A child ended by a signal has no exit code: stopping it twice must not wait for ever.
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function writeAtomically(file: string, snapshot: Snapshot): void {
  replaceFile(file, JSON.stringify(snapshot));
}
