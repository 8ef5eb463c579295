import type * as net from 'node:net';
import type { Counter } from '../../stats/store.js';
import { responseHeadBytes } from '../codec/h1-head-bytes.js';
import { reasonPhrase } from '../codec/h1-status.js';

/** A response head's last lines by `headTail`'s index: each made once, not per response. */
const TAILS = ['', 'transfer-encoding: chunked\r\n'].flatMap((te) =>
  ['\r\n', 'connection: close\r\n\r\n', 'connection: keep-alive\r\n\r\n'].map((c) => te + c),
);

/** The lines after a response head's length (if any): `chunked`, then `connection` close or keep-alive. */
export function headTail(chunked: boolean, close: boolean, keepAlive: boolean): string {
  return TAILS[(chunked ? 3 : 0) + (close ? 1 : keepAlive ? 2 : 0)] as string;
}

/** Writes a head still waiting once the tick that set it is over (`PendingHead.set`). */
function writeIfWaiting(pending: PendingHead, socket: net.Socket): void {
  if (pending.waiting && !socket.destroyed) socket.write(pending.take(null));
}

/**
 * A downstream HTTP/1 response head not written yet: its fields, kept until the first body
 * bytes of the same tick so that both go out in one Buffer, and what its first and last lines say.
 */
export class PendingHead {
  private fields: string[] | null = null;
  private version = 'HTTP/1.1';
  private status = 0;
  private length = -1;
  private framing = '';

  /** `downstream_cx_tx_bytes_total`, counted as each head is taken. */
  constructor(private readonly txBytes: Counter) {}

  get waiting(): boolean {
    return this.fields !== null;
  }

  /**
   * `length`: the body's, written as `content-length` unless negative; `framing`: the other
   * framing and connection fields and the empty line. With `socket`, a head no
   * body bytes took by the end of this tick is written to it alone: a body that comes later
   * (an event stream's first event, a long poll) held the head from the client until it came,
   * and a body that never came (the upstream closing) left the client no answer at all.
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
    if (socket !== null) process.nextTick(writeIfWaiting, this, socket);
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
