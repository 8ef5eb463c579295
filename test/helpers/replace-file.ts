import { renameSync, writeFileSync } from 'node:fs';

/**
 * Replaces `file` whole with one rename, as a watched xDS path source (and the go-control-plane
 * test server's snapshot) must be replaced: its reader never sees it half written.
 */
export function replaceFile(file: string, text: string): void {
  const next = `${file}.next`;
  writeFileSync(next, text);
  renameSync(next, file);
}

/** A `DiscoveryResponse` as an xDS path source holds it. */
export function discoveryResponse(version: unknown, resources: unknown): string {
  return JSON.stringify({ version_info: version, resources });
}
