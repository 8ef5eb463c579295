import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { reserveDynamicBaseId, writeBaseId } from '../../src/cli/base-id.js';

const dir = mkdtempSync(join(tmpdir(), 'proxy-base-id-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('dynamic base id', () => {
  it('gives each reservation a different, unused base id', async () => {
    // A socket path of our own so proxies running elsewhere on the machine do not interfere.
    const socketPath = `@proxy_test_${process.pid}_${Date.now()}`;
    const first = await reserveDynamicBaseId(socketPath);
    const second = await reserveDynamicBaseId(socketPath);
    assert.equal(first, 0);
    assert.equal(second, 1);
  });

  it('writes the base id to --base-id-path and names the path when it cannot', () => {
    writeBaseId(join(dir, 'id'), 17);
    assert.equal(readFileSync(join(dir, 'id'), 'utf8'), '17');
    assert.throws(
      () => writeBaseId(join(dir, 'missing', 'id'), 1),
      /cannot write --base-id-path '.*missing\/id'/,
    );
  });
});
