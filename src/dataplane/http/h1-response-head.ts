import type * as net from 'node:net';
import type { Counter } from '../../stats/store.js';
import { responseHeadBytes } from '../codec/h1-head-bytes.js';
import { reasonPhrase } from '../codec/h1-status.js';

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
  private framing = '';

  /** `downstream_cx_tx_bytes_total`, counted as each head is taken. */
  constructor(private readonly txBytes: Counter) {}

  get waiting(): boolean {
    return this.fields !== null;
  }

  /**
   * `framing`: the framing and connection fields and the empty line. With `socket`, a head no
   * body bytes took by the end of this tick is written to it alone: a body that comes later
   * (an event stream's first event, a long poll) held the head from the client until it came,
   * and a body that never came (the upstream closing) left the client no answer at all.
   */
  set(version: string, status: number, fields: string[], framing: string, socket: net.Socket | null): void {
    this.version = version;
    this.status = status;
    this.fields = fields;
    this.framing = framing;
    if (socket !== null) process.nextTick(writeIfWaiting, this, socket);
  }

  /** The head as bytes, with `body` after it in the same Buffer when given; nothing waits after. */
  take(body: Buffer | null): Buffer {
    const fields = this.fields as string[];
    this.fields = null;
    const status = this.status;
    const head = responseHeadBytes(this.version, status, reasonPhrase(status), fields, this.framing, body);
    this.txBytes.add(head.length - (body?.length ?? 0));
    return head;
  }
}
