import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hotRestartVersion } from '../../src/cli/hot-restart-version.js';
import { DEFAULT_OPTIONS } from '../../src/cli/parse.js';

describe('hotRestartVersion', () => {
  it('is the reference value by default and "disabled" without hot restart', () => {
    assert.equal(hotRestartVersion(DEFAULT_OPTIONS), '11.104');
    assert.equal(hotRestartVersion({ ...DEFAULT_OPTIONS, disableHotRestart: true }), 'disabled');
  });

  it('changes with --max-stats and --max-obj-name-len, which change the shared layout', () => {
    const a = hotRestartVersion({ ...DEFAULT_OPTIONS, maxStats: 20000 });
    const b = hotRestartVersion({ ...DEFAULT_OPTIONS, maxObjNameLen: 100 });
    assert.notEqual(a, '11.104');
    assert.notEqual(b, '11.104');
    assert.notEqual(a, b);
  });
});
