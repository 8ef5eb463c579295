import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { enableCoreDump } from '../../src/cli/core-dump.js';

/** [soft, hard] core file size limits of this process. */
function coreLimits(): [string, string] {
  const row = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Max core file size'));
  const [soft = '', hard = ''] = row?.slice('Max core file size'.length).trim().split(/\s+/) ?? [];
  return [soft, hard];
}

describe('enableCoreDump', { skip: process.platform !== 'linux' && 'Linux only' }, () => {
  it('raises the core file size soft limit to the hard limit', () => {
    const warning = enableCoreDump();
    assert.equal(warning, null);
    const [soft, hard] = coreLimits();
    assert.equal(soft, hard);
  });
});
