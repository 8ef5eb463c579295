import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { fixture, runCli } from '../helpers/bootstrap.js';

const FORMATS = ['yaml', 'json', 'pb_text', 'pb'];
type Run = Awaited<ReturnType<typeof runCli>>;

describe('proxy --mode validate -c <file>', () => {
  const runs = new Map<string, Run>();
  // The eight processes run at once: each spends most of its time starting Node.
  before(async () => {
    const names = ['default.yaml', ...FORMATS.flatMap((ext) => [`full.${ext}`, `invalid.${ext}`])];
    const results = await Promise.all(names.map((n) => runCli(['--mode', 'validate', '-c', fixture(n)])));
    for (const [i, n] of names.entries()) runs.set(n, results[i]!);
  });

  it('exits 0 with an OK line for a config it serves', () => {
    const out = runs.get('default.yaml')!;
    assert.equal(out.status, 0, out.stderr);
    assert.match(out.stdout, /OK/);
  });

  for (const ext of FORMATS) {
    // full.* decodes every message this build knows; since its EDS cluster's file source
    // (issue 15) acts, every field of it is served.
    it(`validates every field of a .${ext} that sets them all`, () => {
      const out = runs.get(`full.${ext}`)!;
      assert.equal(out.status, 0, out.stderr);
      assert.doesNotMatch(out.stderr, /not supported by this build/);
      assert.match(out.stdout, /OK/);
    });

    it(`exits 1 printing every error for an invalid .${ext}`, () => {
      const out = runs.get(`invalid.${ext}`)!;
      assert.equal(out.status, 1);
      const lines = out.stderr.split('\n').filter((l) => l.includes(`invalid.${ext}: static_resources.`));
      assert.equal(lines.length, 9, out.stderr);
      assert.doesNotMatch(out.stdout, /OK/);
    });
  }
});
