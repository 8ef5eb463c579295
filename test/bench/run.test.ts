import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const compiled = import.meta.url.includes('/dist/');
const runner = fileURLToPath(new URL(`../../bench/run.${compiled ? 'js' : 'ts'}`, import.meta.url));

test('bench/run with an unknown part exits 1 and lists the parts, without running any', () => {
  const loader = compiled ? [] : ['--import', 'tsx'];
  const result = spawnSync(process.execPath, [...loader, runner, 'dataplane', 'nosuchpart'], {
    encoding: 'utf8',
    timeout: 20000,
  });
  assert.equal(result.status, 1, result.stderr);
  assert.match(result.stderr, /unknown benchmark part\(s\): nosuchpart;/);
  for (const part of ['validate', 'stats', 'admin', 'eds', 'replay', 'memory', 'dataplane']) {
    assert.match(result.stderr, new RegExp(`parts: .*\\b${part}\\b`));
  }
  assert.doesNotMatch(result.stderr, /bench: dataplane \.\.\./);
  assert.equal(result.stdout, '');
});
