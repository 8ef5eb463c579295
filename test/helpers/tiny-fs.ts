/**
 * A tiny tmpfs the test mounts (it runs as root, as CI does) to see what a full disk does:
 * `fill()` takes every free block with a filler file, `free()` gives them back.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TinyFs {
  dir: string;
  /** Writes a filler file until the filesystem is full (ENOSPC). */
  fill(): void;
  /** Removes the filler. */
  free(): void;
  unmount(): void;
}

/** Mounts a tmpfs of `size` (`64k`); a string says why it could not be mounted (not root, no mount). */
export function mountTinyFs(size = '64k'): TinyFs | string {
  const dir = mkdtempSync(join(tmpdir(), 'tiny-fs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    return `cannot mount a tmpfs (${(err as Error).message.split('\n')[0]})`;
  }
  const filler = join(dir, 'filler');
  return {
    dir,
    fill() {
      const fd = openSync(filler, 'a');
      const block = Buffer.alloc(512, 0x78);
      try {
        for (;;) writeSync(fd, block);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
      } finally {
        closeSync(fd);
      }
    },
    free() {
      rmSync(filler, { force: true });
    },
    unmount() {
      try {
        unlinkSync(filler);
      } catch {
        // Already freed.
      }
      execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
