import { renameSync, rmSync, writeFileSync } from 'node:fs';

/**
 * Writes a file the proxy hands to whoever started it (`--admin-address-path`,
 * `--base-id-path`) whole or not at all: under a temporary name beside it, then renamed over
 * it, so a script waiting for the file never reads it empty or cut. A failure names the option
 * and the path; a full disk left an empty admin address file behind, which a script polling
 * for it could take for the address, and the error (`ENOSPC: no space left on device, write`)
 * named no file.
 */
export function writeOutputFile(option: string, path: string, text: string): void {
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, text);
    renameSync(temporary, path);
  } catch (err) {
    rmSync(temporary, { force: true });
    throw new Error(`cannot write ${option} '${path}': ${(err as Error).message}`);
  }
}
