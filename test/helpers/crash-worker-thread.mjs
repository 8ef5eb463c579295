// Preloaded into a proxy under test (NODE_OPTIONS=--import=<this file>): data-plane worker
// thread N throws an uncaught error once the file `<CRASH_WORKER_FILE>.N` appears, and thread 1
// also once the file named by CRASH_WORKER_FILE does. The file is removed first, so the worker
// restarted in its place runs on. Plain JavaScript: the main thread loads NODE_OPTIONS' imports
// before its own `--import tsx`.
import { existsSync, rmSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';

const file = process.env.CRASH_WORKER_FILE;
const id = process.env.PROXY_WORKER_ID;
if (!isMainThread && file && id) {
  const files = id === '1' ? [file, `${file}.${id}`] : [`${file}.${id}`];
  setInterval(() => {
    const asked = files.find((f) => existsSync(f));
    if (!asked) return;
    rmSync(asked, { force: true });
    throw new Error('worker thread crash asked for by the test');
  }, 50).unref();
}
