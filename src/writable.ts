import { accessSync, constants, statSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Why a file could not be opened for appending or writing (a directory, a read-only
 * filesystem, a directory that does not exist, no permission), or null. Asked without opening
 * it, so checking creates no file: `--mode validate`, a refused push and a refused admin
 * request leave the disk as it was.
 */
export function whyNotWritable(file: string): string | null {
  try {
    const stat = statSync(file, { throwIfNoEntry: false });
    if (stat?.isDirectory()) return 'is a directory';
    // A new file needs a directory it may be created in.
    if (stat) accessSync(file, constants.W_OK);
    else accessSync(dirname(file), constants.W_OK | constants.X_OK);
    return null;
  } catch (err) {
    // "EROFS: read-only file system, access '/x'": the reason, with its code.
    const { code, message } = err as NodeJS.ErrnoException;
    return `${/^\w+: ([^,]+)/.exec(message)?.[1] ?? message} (${code})`;
  }
}
