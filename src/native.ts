import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The addon `native/build/Release/<name>.node` (built by `npm ci`, `scripts/build-native.mjs`)
 * from the repository root above this module (works from `src/` and `dist/src/`), or why it
 * cannot be had: the sentence a refusal quotes.
 */
export function loadAddon<T>(name: string): T | string {
  if (process.platform !== 'linux') return `it is Linux-only (this is ${process.platform})`;
  const built = path.join('native', 'build', 'Release', `${name}.node`);
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, built);
    if (existsSync(candidate)) {
      try {
        return createRequire(import.meta.url)(candidate) as T;
      } catch (err) {
        return `${candidate} did not load: ${(err as Error).message}`;
      }
    }
    const parent = path.dirname(dir);
    if (parent === dir)
      return `${built} was not built (npm ci builds it with node-gyp; see docs/dependencies.md)`;
    dir = parent;
  }
}
