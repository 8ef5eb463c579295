// Preloaded into a proxy under test (NODE_OPTIONS=--import=<this file>): data-plane worker
// thread 1 throws an uncaught error once the file named by CRASH_WORKER_FILE appears. The file
// is removed first, so the worker restarted in its place runs on. Plain JavaScript: the main
// thread loads NODE_OPTIONS' imports before its own `--import tsx`.
import { existsSync, rmSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';

const file = process.env.CRASH_WORKER_FILE;
if (!isMainThread && file && process.env.PROXY_WORKER_ID === '1') {
  setInterval(() => {
    if (!existsSync(file)) return;
    rmSync(file, { force: true });
    throw new Error('worker thread crash asked for by the test');
  }, 50).unref();
}
