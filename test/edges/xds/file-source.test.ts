/**
 * A `path` config source: endpoints read from a file holding a DiscoveryResponse, replaced by
 * an atomic rename; a bad file is rejected and the last good members keep serving.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { JsonObject } from '../../../events/index.js';
import { startProxyProcess } from '../../helpers/proxy-process.js';
import { replaceFile } from '../../helpers/replace-file.js';
import { assignment, edsBootstrap, get, until, upstream } from '../../helpers/xds-fixtures.js';

const CLA = 'type.googleapis.com/envoy.api.v2.ClusterLoadAssignment';

function response(version: string, assignments: JsonObject[]): string {
  return JSON.stringify({
    version_info: version,
    resources: assignments.map((a) => ({ '@type': CLA, ...a })),
  });
}

describe('EDS from a file (path)', () => {
  it('serves the file, follows an atomic rename, and keeps the last good members on a bad file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'proxy-xds-file-'));
    const file = join(dir, 'eds.json');
    const replace = (text: string) => replaceFile(file, text);
    const a = await upstream('a');
    const b = await upstream('b');
    writeFileSync(file, response('1', [assignment('some_service', [a.port])]));
    // The management cluster is unused: nothing here is discovered over gRPC.
    const proxy = await startProxyProcess(edsBootstrap(1, { path: file }), ['--concurrency', '1']);
    try {
      const port = await proxy.listenerPort('listener_0');
      assert.equal((await get(port)).body, 'a');
      // A field this build does not know (from a newer API) is let through and counted.
      replace(response('2', [{ ...assignment('some_service', [b.port]), from_the_future: true }]));
      await until('the renamed file serves', async () => (await get(port)).body === 'b');
      assert.match(
        (await proxy.get('/stats?filter=dynamic_unknown')).body,
        /server\.dynamic_unknown_fields: 1/,
      );
      replace(response('3', [assignment('some_service', [a.port], { load_balancing_weight: 0 })]));
      await until('the bad file rejected', async () =>
        /some_service\.update_rejected: 1/.test((await proxy.get('/stats?filter=update_rejected')).body),
      );
      for (let i = 0; i < 5; i++) assert.equal((await get(port)).body, 'b');
      const events = (await proxy.get('/events?format=json')).body;
      assert.match(events, /load_balancing_weight: must be >= 1/);
    } finally {
      await proxy.stop();
      await a.close();
      await b.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('EDS from a file (v3 path_config_source with watched_directory)', () => {
  it('re-reads the file when a Kubernetes-style ..data symlink swap happens in the watched directory', async () => {
    // A ConfigMap volume: eds.json -> ..data/eds.json, ..data -> a versioned directory. An
    // update renames a new ..data over the old one, so no event names eds.json itself.
    const dir = mkdtempSync(join(tmpdir(), 'proxy-xds-watched-'));
    const version = (name: string, text: string) => {
      mkdirSync(join(dir, name));
      writeFileSync(join(dir, name, 'eds.json'), text);
      symlinkSync(name, join(dir, '..data_tmp'));
      renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    };
    const a = await upstream('a');
    const b = await upstream('b');
    version('..v1', response('1', [assignment('some_service', [a.port])]));
    symlinkSync('..data/eds.json', join(dir, 'eds.json'));
    const source = { path_config_source: { path: join(dir, 'eds.json'), watched_directory: { path: dir } } };
    const proxy = await startProxyProcess(edsBootstrap(1, source), ['--concurrency', '1']);
    try {
      const port = await proxy.listenerPort('listener_0');
      assert.equal((await get(port)).body, 'a');
      version('..v2', response('2', [assignment('some_service', [b.port])]));
      await until('the swapped version serves', async () => (await get(port)).body === 'b');
    } finally {
      await proxy.stop();
      await a.close();
      await b.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
