/**
 * Holds what a connection's peer sends until `release`, under whatever reads the socket: the
 * reference's read filters hold bytes by stopping iteration in `onData`, while here the terminal
 * filter owns the socket once the read filters pass it on. The first bytes (or the peer's FIN,
 * which the reference also gives `onData`) call `onFirst`; they and any that follow wait, and
 * the socket stops reading (as when its buffer is full: a `push` that returns false makes the
 * socket stop reading) until released, so a held peer cannot grow the buffer.
 */
import type * as net from 'node:net';

export function holdReads(socket: net.Socket, onFirst: () => void): () => void {
  const held: Array<Buffer | null> = [];
  // Bytes a listener filter (the TLS or HTTP inspector) read and put back are in already.
  const buffered = socket.readableLength > 0 ? (socket.read() as Buffer | null) : null;
  if (buffered !== null) {
    held.push(buffered);
    queueMicrotask(onFirst);
  }
  socket.push = (chunk: Buffer | null) => {
    held.push(chunk);
    if (held.length === 1) onFirst();
    return false;
  };
  return () => {
    // The prototype's push again, and what was held goes through it in order.
    delete (socket as { push?: unknown }).push;
    for (const chunk of held) socket.push(chunk);
    // Reading starts again (a held socket stopped its handle).
    if (!socket.destroyed) socket.read(0);
  };
}
