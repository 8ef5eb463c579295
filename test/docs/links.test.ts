import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { root } from '../helpers/bootstrap.js';

const run = promisify(execFile);
const script = join(root, 'scripts', 'check-doc-links.mjs');
const scratch = mkdtempSync(join(tmpdir(), 'proxy-doc-links-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** Runs the checker on `dir`; its exit code and output. */
async function check(dir: string): Promise<{ code: number; out: string }> {
  try {
    const { stdout } = await run(process.execPath, [script, dir], { timeout: 10_000 });
    return { code: 0, out: stdout };
  } catch (err) {
    const failed = err as { code: number; stderr: string };
    return { code: failed.code, out: failed.stderr };
  }
}

describe('scripts/check-doc-links.mjs', () => {
  it('finds every link of the README and docs/ resolving', async () => {
    const { code, out } = await check(root);
    assert.equal(code, 0, out);
    assert.match(out, /all resolve/);
  });

  it('reports missing files, missing anchors, links out of the repository and quoted paths gone, not code', async () => {
    const repo = join(scratch, 'repo');
    mkdirSync(join(repo, 'docs'), { recursive: true });
    writeFileSync(
      join(repo, 'docs', 'page.md'),
      '# Page\n\n## The `/stats` endpoint (GET)\n## Twice\n## Twice\n',
    );
    writeFileSync(
      join(repo, 'README.md'),
      [
        '# Top',
        '[a](docs/page.md#the-stats-endpoint-get) [b](docs/page.md#twice-1) [c](#top) [d](https://example.com/x)',
        '[e](docs/gone.md) [f](docs/page.md#nowhere) [g](../outside.md)',
        '`[h](docs/in-code.md)` `docs/page.md` `src/moved.ts` `src/<name>.ts`',
        '```',
        '[i](docs/in-fence.md)',
        '```',
        '',
      ].join('\n'),
    );
    const { code, out } = await check(repo);
    assert.equal(code, 1);
    assert.deepEqual(out.trim().split('\n'), [
      'README.md:3: docs/gone.md: no such file',
      'README.md:3: docs/page.md#nowhere: no heading with anchor #nowhere',
      'README.md:3: ../outside.md: points outside the repository',
      'README.md:4: `src/moved.ts`: quoted path, no such file',
      '4 broken link(s) of 9',
    ]);
  });
});
