import type { Readable } from 'node:stream';
import type { Worker } from 'node:worker_threads';

/*
 * A server's stdout and stderr are often pipes (`proxy ... | head`, a log shipper that
 * restarts, a terminal that closes). Node emits a write's EPIPE (or EIO) as an 'error' on the
 * stream, and an 'error' nobody listens to ends the process: one stdout access log line after
 * the reader left killed the proxy with every connection on it. The reference ignores SIGPIPE
 * and carries on; so does this: output for a reader that is gone is lost, nothing more.
 */

/** Keeps the process serving when the reader of its stdout or stderr goes away. */
export function surviveBrokenPipes(): void {
  for (const stream of [process.stdout, process.stderr]) {
    if (!stream.listeners('error').includes(dropOutput)) stream.on('error', dropOutput);
  }
}

/** Nowhere left to report it: the stream that failed is where it would be reported. */
function dropOutput(): void {}

/**
 * Copies a worker thread's stdout and stderr (made with `stdout: true, stderr: true`) to the
 * process's, dropping them once the process's is gone. Node's own pipe stops at the first
 * error and never reads again, so the worker held every later line (its writes wait for the
 * parent to read): 4,000 access log lines of 30 KB kept 120 MB. The process's stdout and
 * stderr are synchronous on Linux (files, pipes, terminals), so nothing queues here.
 */
export function relayWorkerOutput(worker: Worker): void {
  relay(worker.stdout, process.stdout);
  relay(worker.stderr, process.stderr);
}

function relay(from: Readable, to: NodeJS.WriteStream): void {
  from.on('data', (chunk: Buffer) => {
    if (!to.destroyed) to.write(chunk);
  });
}
