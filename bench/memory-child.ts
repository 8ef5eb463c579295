/**
 * One measurement of the `memory` part, in its own process so nothing of another bootstrap
 * stays on the heap: serves the given bootstrap in-process (`--concurrency 1`, logging off),
 * waits for LIVE, collects garbage and prints `{"heapUsed": bytes, "rss": bytes}`.
 * Usage: `node --expose-gc memory-child.js <bootstrap.json>`.
 */
import { DEFAULT_OPTIONS } from '../src/cli/parse.js';
import { serve } from '../src/server/main.js';

const configPath = process.argv[2];
const gc = (globalThis as { gc?: () => void }).gc;
if (!configPath || !gc) {
  process.stderr.write('usage: node --expose-gc memory-child.js <bootstrap.json>\n');
  process.exit(2);
}
await serve({ ...DEFAULT_OPTIONS, configPath, concurrency: 1, logLevel: 'off' });
// Let the start-up timers and the stats flush run once before the heap is read.
await new Promise((resolve) => setTimeout(resolve, 1000));
for (let i = 0; i < 3; i++) gc();
const { heapUsed, rss } = process.memoryUsage();
process.stdout.write(`${JSON.stringify({ heapUsed, rss })}\n`);
process.exit(0);
