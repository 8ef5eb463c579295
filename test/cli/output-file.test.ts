/**
 * `--admin-address-path` and `--base-id-path` on a full disk. Root cause: each was written in
 * place with `writeFileSync`, which creates the file before it writes: on a full disk the start
 * failed with `error: ENOSPC: no space left on device, write`, naming no file, and left an
 * empty admin address file behind for a script polling for it to read.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { writeOutputFile } from '../../src/cli/output-file.js';
import { runProxy } from '../helpers/cli.js';
import { mountTinyFs } from '../helpers/tiny-fs.js';

const BOOTSTRAP = JSON.stringify({
  admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
});

test('on a full disk: the option and path named, and no file left behind', async (t) => {
  const fs = mountTinyFs();
  if (typeof fs === 'string') {
    t.skip(fs);
    return;
  }
  try {
    const config = join(fs.dir, 'bootstrap.json');
    writeFileSync(config, BOOTSTRAP);
    const written = join(fs.dir, 'written');
    writeOutputFile('--admin-address-path', written, '127.0.0.1:1');
    assert.equal(readFileSync(written, 'utf8'), '127.0.0.1:1');
    fs.fill();
    assert.throws(
      () => writeOutputFile('--base-id-path', join(fs.dir, 'id'), '7'),
      /^Error: cannot write --base-id-path '.*\/id': ENOSPC: no space left on device, write$/,
    );
    const address = join(fs.dir, 'admin');
    const run = await runProxy(
      ['-c', config, '--concurrency', '2', '--admin-address-path', address],
      {},
      60_000,
    );
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, /error: cannot write --admin-address-path '.*\/admin': ENOSPC/);
    assert.equal(existsSync(address), false);
    assert.deepEqual(readdirSync(fs.dir).sort(), ['bootstrap.json', 'filler', 'written']);
    // A file already there is replaced whole, never emptied first.
    fs.free();
    writeOutputFile('--admin-address-path', written, '127.0.0.1:2');
    assert.equal(readFileSync(written, 'utf8'), '127.0.0.1:2');
  } finally {
    fs.unmount();
  }
});
