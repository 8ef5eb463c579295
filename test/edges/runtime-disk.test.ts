/**
 * Root cause: a disk layer was read with a recursive `readdir`, which takes a symbolic link to
 * a file for no file and follows links to directories until the kernel's ELOOP. A Kubernetes
 * ConfigMap volume (every key a link into `..data`) gave none of its keys, silently; a link
 * to the layer's own directory gave 40 levels of junk keys (`loop.loop.loop.a`). The walk is
 * now the reference's: entries by `stat`, at most 16 levels deep, files read as
 * `readNamedFile` reads.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { readRuntimeTree } from '../../src/edges/runtime-disk.js';
import { startProxyProcess } from '../helpers/proxy-process.js';

const root = mkdtempSync(join(tmpdir(), 'proxy-runtime-disk-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** A ConfigMap volume as the kubelet writes it: the keys link into `..data`, a link to a dated directory. */
function configMap(name: string): string {
  const dir = join(root, name);
  mkdirSync(join(dir, '..2026_11_28', 'health'), { recursive: true });
  writeFileSync(join(dir, '..2026_11_28', 'upstream.healthy_panic_threshold'), '25\n');
  writeFileSync(join(dir, '..2026_11_28', 'health', 'min'), '7');
  symlinkSync('..2026_11_28', join(dir, '..data'));
  symlinkSync('..data/upstream.healthy_panic_threshold', join(dir, 'upstream.healthy_panic_threshold'));
  symlinkSync('..data/health', join(dir, 'health'));
  return dir;
}

describe('readRuntimeTree', () => {
  it('reads a ConfigMap volume: links count as what they point at', async () => {
    const values = await readRuntimeTree(configMap('cm'));
    assert.equal(values['upstream.healthy_panic_threshold'], '25');
    assert.equal(values['health.min'], '7');
  });

  it('refuses a link loop past 16 levels; skips a link to a device', async () => {
    const loop = join(root, 'loop');
    mkdirSync(loop);
    writeFileSync(join(loop, 'a'), '1');
    symlinkSync('.', join(loop, 'again'));
    await assert.rejects(readRuntimeTree(loop), /Walk recursion depth exceeded 16/);
    const device = join(root, 'device');
    mkdirSync(device);
    symlinkSync('/dev/zero', join(device, 'zero'));
    // A device is no regular file: skipped, as the reference's walk skips it, never read.
    assert.deepEqual(await readRuntimeTree(device), {});
  });
});

describe('a disk layer on a ConfigMap volume', () => {
  it('serves its keys in /runtime', async () => {
    const proxy = await startProxyProcess({
      admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
      layered_runtime: { layers: [{ name: 'disk', disk_layer: { symlink_root: configMap('served') } }] },
    });
    try {
      const runtime = JSON.parse((await proxy.get('/runtime')).body) as {
        entries: Record<string, { final_value: string }>;
      };
      assert.equal(runtime.entries['upstream.healthy_panic_threshold']?.final_value, '25');
      assert.equal(runtime.entries['health.min']?.final_value, '7');
    } finally {
      await proxy.stop();
    }
  });
});
