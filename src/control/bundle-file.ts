/**
 * Incident bundles (`GET /debug/bundle`) read back: `proxy replay` opens a bundle as it
 * opens an event log, by writing the log the bundle carries to a private temporary file.
 */
import { closeSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** What a bundle starts with (`{"format": "proxy-debug-bundle"`, however it is indented). */
const BUNDLE_HEAD = /^\{\s*"format"\s*:\s*"proxy-debug-bundle"/;

/** True when the file at `path` is a bundle rather than an event log. */
export function isBundle(path: string): boolean {
  const fd = openSync(path, 'r');
  try {
    const head = Buffer.alloc(128);
    const read = readSync(fd, head, 0, head.length, 0);
    return BUNDLE_HEAD.test(head.subarray(0, read).toString('utf8'));
  } finally {
    closeSync(fd);
  }
}

/**
 * The event log of the bundle at `path` as a file of its own, and how to remove it; or
 * what is wrong with the bundle.
 */
export function extractBundleLog(path: string): { path: string; remove(): void } | string {
  let bundle: { event_log?: { ndjson?: unknown; error?: unknown } };
  try {
    bundle = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    return `${path} starts like a bundle but is not JSON (${(err as Error).message})`;
  }
  const log = bundle.event_log;
  if (typeof log?.ndjson !== 'string') {
    return `${path} is a bundle without an event log${typeof log?.error === 'string' ? ` (${log.error})` : ''}`;
  }
  const dir = mkdtempSync(join(tmpdir(), 'proxy-bundle-'));
  const file = join(dir, 'events.ndjson');
  writeFileSync(file, log.ndjson, { mode: 0o600 });
  return { path: file, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
