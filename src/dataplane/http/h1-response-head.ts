import type * as net from 'node:net';
import type { Counter } from '../../stats/store.js';
import { responseHeadBytes } from '../codec/h1-head-bytes.js';
import { reasonPhrase } from '../codec/h1-status.js';
import { atReadEnd, type ReadEndWork } from '../codec/read-end.js';

/** A response head's last lines by `headTail`'s index: each made once, not per response. */
const TAILS = ['', 'transfer-encoding: chunked\r\n'].flatMap((te) =>
  ['\r\n', 'connection: close\r\n\r\n', 'connection: keep-alive\r\n\r\n'].map((c) => te + c),
);

/** The lines after a response head's length (if any): `chunked`, then `connection` close or keep-alive. */
export function headTail(chunked: boolean, close: boolean, keepAlive: boolean): string {
  return TAILS[(chunked ? 3 : 0) + (close ? 1 : keepAlive ? 2 : 0)] as string;
}

/**
 * A downstream HTTP/1 response head not written yet: its fields, kept until the first body
 * bytes of the same read (or tick) so that both go out in one Buffer, and what its first and
 * last lines say.
 */
export class PendingHead implements ReadEndWork {
  private fields: string[] | null = null;
  private version = 'HTTP/1.1';
  private status = 0;
  private length = -1;
  private framing = '';
  private socket: net.Socket | null = null;

  /** `downstream_cx_tx_bytes_total`, counted as each head is taken. */
  constructor(private readonly txBytes: Counter) {}

  get waiting(): boolean {
    return this.fields !== null;
  }

  /**
   * `length`: the body's, written as `content-length` unless negative; `framing`: the other
   * framing and connection fields and the empty line. With `socket`, a head no
   * body bytes took by the end of the upstream read that brought it (or of this tick, set
   * outside one) is written to it alone: a body that comes later (an event stream's first
   * event, a long poll) held the head from the client until it came, and a body that never
   * came (the upstream closing) left the client no answer at all. Queued with `atReadEnd`,
   * not a `process.nextTick` of its own: that was 200-230 B a response, and the usual
   * response's body comes in the read of its head.
   */
  set(
    version: string,
    status: number,
    fields: string[],
    length: number,
    framing: string,
    socket: net.Socket | null,
  ): void {
    this.version = version;
    this.status = status;
    this.fields = fields;
    this.length = length;
    this.framing = framing;
    this.socket = socket;
    if (socket !== null) atReadEnd(this);
  }

  /** Writes the head alone if no body bytes took it (`set`). */
  atReadEnd(): void {
    const socket = this.socket;
    this.socket = null;
    if (socket !== null && this.waiting && !socket.destroyed) socket.write(this.take(null));
  }

  /** The head as bytes, with `body` after it in the same Buffer when given; nothing waits after. */
  take(body: Buffer | null): Buffer {
    const fields = this.fields as string[];
    this.fields = null;
    const status = this.status;
    const head = responseHeadBytes(
      this.version,
      status,
      reasonPhrase(status),
      fields,
      this.length,
      this.framing,
      body,
    );
    this.txBytes.add(head.length - (body?.length ?? 0));
    return head;
  }
}
