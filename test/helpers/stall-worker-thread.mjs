// Preloaded into a proxy under test (NODE_OPTIONS=--import=<this file>): data-plane worker
// thread 1 holds its event loop for STALL_WORKER_MS (default 3000) once the file named by
// STALL_WORKER_FILE appears, as a thread busy with a long request or a GC pause would. The
// file is removed first, so it stalls once. Plain JavaScript: the main thread loads
// NODE_OPTIONS' imports before its own `--import tsx`.
import { existsSync, rmSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';

const file = process.env.STALL_WORKER_FILE;
if (!isMainThread && file && process.env.PROXY_WORKER_ID === '1') {
  const ms = Number(process.env.STALL_WORKER_MS ?? 3000);
  setInterval(() => {
    if (!existsSync(file)) return;
    rmSync(file, { force: true });
    const until = Date.now() + ms;
    while (Date.now() < until);
  }, 50).unref();
}
