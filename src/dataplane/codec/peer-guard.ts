/**
 * The guard at the edges where a peer's bytes enter the data plane: a throw while handling them
 * is a bug of ours, and it costs that one connection, never the process (the main thread is
 * data-plane thread 0, so an uncaught throw there ends every listener, the admin and the
 * workers). What a guard catches is counted (`server.envoy_bug_failures`, the reference's
 * counter for a bug a release build survives) and logged with its stack at error level, at most
 * once a second with the number not logged since (docs/reliability.md, "The peer-input guard").
 * Codec-room code with no imports, so every read path can reach it: the codec, the pools, the
 * listeners, the health probes.
 */

/** Where the thread's faults go: set by the data plane of each thread when it starts. */
export interface PeerFaultSink {
  count(): void;
  log(err: unknown, where: string, notLogged: number): void;
}

/** Before a data plane sets its own (a codec used alone, a test): stderr, still never silent. */
const STDERR_SINK: PeerFaultSink = {
  count() {},
  log: (err, where, skipped) =>
    console.error(`exception on ${where} input (connection closed; ${skipped} not logged):`, err),
};

let sink: PeerFaultSink = STDERR_SINK;
let lastLoggedAt = Number.NEGATIVE_INFINITY;
let notLogged = 0;
const LOG_EVERY_MS = 1000;

/** Sends this thread's caught faults to `to` (the latest caller wins: one data plane a thread). */
export function setPeerFaultSink(to: PeerFaultSink): void {
  sink = to;
  lastLoggedAt = Number.NEGATIVE_INFINITY;
  notLogged = 0;
}

/** Anything with a `destroy`: a socket, a TLS socket, an HTTP/2 stream. */
interface Destroyable {
  destroy(err?: Error): unknown;
}

/**
 * Counts and logs `err`, thrown while handling `where`'s input, and destroys `connection`
 * (the connection the input came on; its close handlers release what it held).
 */
export function peerFault(err: unknown, where: string, connection: Destroyable | null): void {
  try {
    connection?.destroy();
  } finally {
    sink.count();
    const now = Date.now();
    if (now - lastLoggedAt >= LOG_EVERY_MS) {
      lastLoggedAt = now;
      const skipped = notLogged;
      notLogged = 0;
      sink.log(err, where, skipped);
    } else notLogged++;
  }
}

/**
 * `onChunk` as a `data` listener of `socket` that turns a throw into `peerFault`: made once a
 * connection, so a read allocates nothing more than before.
 */
export function guardedData(
  socket: Destroyable,
  where: string,
  onChunk: (chunk: Buffer) => void,
): (chunk: Buffer) => void {
  return (chunk) => {
    try {
      onChunk(chunk);
    } catch (err) {
      peerFault(err, where, socket);
    }
  };
}
