/** Reading a named pipe the proxy writes, as a separate reader process would. */
import { spawn } from 'node:child_process';

/** What `cat` reads from `fifo` within `ms` (a reader of its own, so the proxy's open succeeds). */
export function readFifo(fifo: string, ms: number): Promise<string> {
  const cat = spawn('timeout', [String(ms / 1000), 'cat', fifo], { stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  cat.stdout.on('data', (d: Buffer) => (out += d));
  return new Promise((resolve) => cat.on('close', () => resolve(out)));
}
