/**
 * A corpus of the reference's own example bootstraps fed unchanged to the `--mode validate`
 * step (fixtures/reference-examples-*): which validate, which are refused, and whether each
 * refusal names its field and is one the test expects. A ratchet: the count only goes up.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { makePki } from '../tls/certs.js';
import { scratchDir } from './admin.js';
import { load } from './bootstrap.js';
import { assertRefusedNamingFields } from './serves.js';

/** Every bootstrap under `dir` (`.yaml`, `.yml`, `.json`), as paths relative to it, sorted. */
export function corpusFiles(dir: string, prefix = ''): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return corpusFiles(path, `${prefix}${name}/`);
      return /\.(ya?ml|json)$/.test(name) && name !== 'manifest.json' ? [`${prefix}${name}`] : [];
    });
}

/** `load` run in a scratch directory laid out first, as `--mode validate` run there would. */
function loadIn(configPath: string, layOut: (dir: string) => void): ReturnType<typeof load> {
  const scratch = scratchDir();
  const cwd = process.cwd();
  try {
    layOut(scratch.dir);
    // load is synchronous: nothing else runs while the process is in the scratch directory.
    process.chdir(scratch.dir);
    return load({ configPath });
  } finally {
    process.chdir(cwd);
    scratch.remove();
  }
}

export interface CorpusExpectations {
  dir: string;
  files: string[];
  /** The number that validate; raised when a feature lands, never lowered. */
  atLeast: number;
  /** Each file this build refuses and what its refusal says; one refused but not here fails. */
  refusals: Record<string, RegExp>;
  /** Files that read others relative to the directory they run in, and how to lay it out. */
  laidOut?: Record<string, (dir: string) => void>;
}

/** Validates every file in-process (the function `--mode validate` runs) and checks the verdicts. */
export function assertCorpusVerdicts(expect: CorpusExpectations): { validated: string[]; refused: string[] } {
  const validated: string[] = [];
  const refused: string[] = [];
  for (const file of expect.files) {
    const layOut = expect.laidOut?.[file];
    const configPath = join(expect.dir, file);
    const loaded = layOut === undefined ? load({ configPath }) : loadIn(configPath, layOut);
    if (loaded.ok) {
      validated.push(file);
      continue;
    }
    refused.push(file);
    assertRefusedNamingFields(loaded.errors, file);
    const expected = expect.refusals[file];
    assert.ok(expected, `${file} is refused, which nobody expected:\n${loaded.errors.join('\n')}`);
    assert.match(loaded.errors.join('\n'), expected, file);
  }
  assert.ok(
    validated.length >= expect.atLeast,
    `${validated.length} of ${expect.files.length} validate; refused:\n${refused.join('\n')}`,
  );
  return { validated, refused };
}

/**
 * Lays out the certificates an example reads relative to where it runs (its image mounts
 * them there): one leaf per `{ cert, key }` pair (named `name` in its SANs), and the CA that
 * issued them at each `ca` path. Paths are relative to the directory laid out.
 */
export function certificates(
  name: string,
  files: { pairs: Array<{ cert: string; key: string }>; ca?: string[] },
): (dir: string) => void {
  return (dir) => {
    const pki = makePki();
    const put = (from: string, to: string) => {
      mkdirSync(dirname(join(dir, to)), { recursive: true });
      copyFileSync(from, join(dir, to));
    };
    try {
      files.pairs.forEach(({ cert, key }, i) => {
        const leaf = pki.leaf(`${name}${i}`, [`DNS:${name}`]);
        put(leaf.cert, cert);
        put(leaf.key, key);
      });
      for (const ca of files.ca ?? []) put(pki.ca.cert, ca);
    } finally {
      pki.remove();
    }
  };
}
