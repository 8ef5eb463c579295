import type * as net from 'node:net';

/** Held pieces up to this many bytes are copied into one buffer; larger ones go out corked. */
const JOIN_MAX = 16 * 1024;

/**
 * The writes one tick makes on a socket, held from `begin` and written as one at the end of
 * the tick (a microtask): copied into one buffer when small, else corked into one `writev`.
 * An upstream HTTP/1.1 connection holds the head of a request with a body, since the body that
 * came with it is fed right after in the same tick: one system call (and one wake-up of the
 * upstream) instead of one per piece.
 */
export class TickWrites {
  private held: Array<string | Buffer> | null = null;
  private bytes = 0;
  private readonly flushNow = (): void => this.flush();

  constructor(private readonly socket: net.Socket) {}

  /** Pieces are being held for the end of the tick. */
  get holding(): boolean {
    return this.held !== null;
  }

  /** Starts holding, with `first` (a string is latin1) as the first piece. */
  begin(first: string | Buffer): void {
    this.held = [first];
    this.bytes = first.length;
    queueMicrotask(this.flushNow);
  }

  /** Holds a piece (a string is latin1); only while `holding`. */
  hold(piece: string | Buffer): void {
    (this.held as Array<string | Buffer>).push(piece);
    this.bytes += piece.length;
  }

  /** The socket is closing: what is held is never written. */
  drop(): void {
    this.held = null;
  }

  private flush(): void {
    const held = this.held;
    if (held === null) return;
    this.held = null;
    const s = this.socket;
    if (s.destroyed) return;
    if (held.length === 1) {
      const only = held[0] as string | Buffer;
      if (typeof only === 'string') s.write(only, 'latin1');
      else s.write(only);
      return;
    }
    if (this.bytes <= JOIN_MAX) {
      const out = Buffer.allocUnsafe(this.bytes);
      let at = 0;
      for (const piece of held) {
        if (typeof piece === 'string') at += out.write(piece, at, 'latin1');
        else at += piece.copy(out, at);
      }
      s.write(out);
      return;
    }
    s.cork();
    for (const piece of held) {
      if (typeof piece === 'string') s.write(piece, 'latin1');
      else s.write(piece);
    }
    s.uncork();
  }
}
