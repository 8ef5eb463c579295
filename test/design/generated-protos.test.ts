/**
 * The generated schemas are what proto/generate.py makes of the reference's field tables and
 * proto/extras.md: a field added to extras.md without running the generator, or a generated
 * file edited by hand, drifts, and the next run of the generator silently undoes it. (Files it
 * does not make, written by hand, do not open with its "Generated from" line.)
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../helpers/import-graph.js';

/** The reference's field tables the generator reads (a shared file, not in the repository). */
const FORMATS = '/work/shared/reference/formats.md';
const GENERATED = '// Generated from the reference v2 field tables';

function protoFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.proto'))
    .sort();
}

test('the committed generated .proto files are exactly what proto/generate.py makes', {
  skip: existsSync(FORMATS) ? false : `${FORMATS} is not on this machine`,
}, () => {
  const out = mkdtempSync(join(tmpdir(), 'generated-protos-'));
  try {
    const run = spawnSync('python3', [join(ROOT, 'proto/generate.py'), FORMATS, out], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(run.status, 0, `generate.py failed: ${run.stderr}`);
    const proto = join(ROOT, 'proto');
    const made = protoFiles(out);
    const committed = protoFiles(proto).filter((name) =>
      readFileSync(join(proto, name), 'utf8').startsWith(GENERATED),
    );
    assert.deepEqual(committed, made, 'the generator makes these files and no others');
    for (const name of made)
      assert.equal(
        readFileSync(join(proto, name), 'utf8'),
        readFileSync(join(out, name), 'utf8'),
        `${relative(ROOT, join(proto, name))} differs from what proto/generate.py makes`,
      );
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
