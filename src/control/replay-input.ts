/**
 * What `proxy replay` reads: an event log or a bundle is read several times (the header, the
 * points, the replay, a second one for `--diff-from`) and from any offset, which a pipe allows
 * none of (`proxy replay <(zcat events.ndjson.gz)` failed with ESPIPE and a stack trace). A
 * pipe or FIFO is copied to a private temporary file first; a device (`/dev/zero` read for
 * ever) or a directory is refused naming what it is.
 */
import { createReadStream, createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';

export interface ReplayInput {
  path: string;
  remove(): void;
}

/** `path` as a regular file to replay, or why it cannot be one. */
export async function replayInput(path: string): Promise<ReplayInput | string> {
  const asIs = { path, remove: () => {} };
  // One that cannot be looked at is the replay's to report, as for any log it cannot open.
  let stats: ReturnType<typeof statSync>;
  try {
    stats = statSync(path);
  } catch {
    return asIs;
  }
  if (stats.isFile()) return asIs;
  if (!stats.isFIFO()) {
    const kind = stats.isDirectory() ? 'a directory' : stats.isSocket() ? 'a socket' : 'a device';
    return `${path} is ${kind}, not an event log (a file, or a pipe such as <(zcat events.ndjson.gz))`;
  }
  const dir = mkdtempSync(join(tmpdir(), 'proxy-replay-'));
  const file = join(dir, 'events.ndjson');
  const remove = () => rmSync(dir, { recursive: true, force: true });
  try {
    await pipeline(createReadStream(path), createWriteStream(file, { mode: 0o600 }));
  } catch (err) {
    remove();
    return `cannot read ${path}: ${(err as Error).message}`;
  }
  return { path: file, remove };
}
