/**
 * Root cause: config text was decoded with `toString('utf8')`, which puts U+FFFD in place of
 * every byte that is not UTF-8. A bootstrap or an xDS response with a Latin-1 byte in a name,
 * a header value or a domain loaded and served with a different value than written, and
 * `--mode validate` said OK. The reference's parsers refuse such text; now the file (JSON,
 * YAML, text proto) is refused naming the line, and a REST response is NACKed.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { readConfigFile } from '../../src/bootstrap/sources.js';
import { startProxyProcess } from '../helpers/proxy-process.js';
import { assignment, edsBootstrap, get, staticCluster, upstream } from '../helpers/xds-fixtures.js';
import { XdsServer } from '../helpers/xds-server.js';

const dir = mkdtempSync(join(tmpdir(), 'proxy-sources-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('readConfigFile with bytes that are not UTF-8', () => {
  for (const [name, text] of [
    ['latin1.yaml', Buffer.from('node:\n  id: edge\n  cluster: caf\xe9\n', 'latin1')],
    ['cut.json', Buffer.concat([Buffer.from('{"node":\n{"id": "\xe2\x82', 'latin1'), Buffer.from('"}}')])],
    ['latin1.pb_text', Buffer.from('node {\n  id: "edge"\n  cluster: "caf\xe9"\n}\n', 'latin1')],
  ] as const)
    it(`refuses ${name} naming the line`, () => {
      const file = join(dir, name);
      writeFileSync(file, text);
      const read = readConfigFile(file);
      assert.equal(read.ok, false);
      if (!read.ok) assert.match(read.error, new RegExp(`^${file}: line (2|3): not valid UTF-8 text$`));
    });

  it('reads UTF-8 as it is, a BOM-less multi-byte name included', () => {
    const file = join(dir, 'ok.yaml');
    writeFileSync(file, 'node:\n  id: edge\n  cluster: café ☕\n');
    const read = readConfigFile(file);
    assert.ok(read.ok);
    if (read.ok) assert.equal((read.json as { node: { cluster: string } }).node.cluster, 'café ☕');
  });
});

describe('a REST response that is not UTF-8', () => {
  it('is NACKed; the last good endpoints serve', async () => {
    const xds = await XdsServer.start();
    const restPort = await xds.startRest();
    const a = await upstream('a');
    xds.set('eds', [assignment('some_service', [a.port])], 'v1');
    const bootstrap = edsBootstrap(xds.port, {
      api_config_source: { api_type: 'REST', cluster_names: ['rest_cluster'], refresh_delay: '0.100s' },
    });
    (bootstrap.static_resources as { clusters: unknown[] }).clusters.push(
      staticCluster('rest_cluster', [restPort]),
    );
    const proxy = await startProxyProcess(bootstrap, ['--concurrency', '1']);
    try {
      const port = await proxy.listenerPort('listener_0');
      await xds.ack('eds', 'v1');
      const cla = 'type.googleapis.com/envoy.api.v2.ClusterLoadAssignment';
      const json = JSON.stringify({
        version_info: 'v2',
        resources: [
          {
            '@type': cla,
            ...assignment('some_service', [a.port], {
              metadata: { filter_metadata: { m: { zone: 'Z\u00e9' } } },
            }),
          },
        ],
      });
      // The é as its Latin-1 byte alone.
      const from = await xds.sendRawRest('eds', Buffer.from(json, 'latin1'));
      // The raw body carries no nonce: the next request answers it.
      const nack = await xds.waitFor(() => true, 10_000, from);
      assert.equal(nack.version_info, 'v1');
      assert.match(nack.error_detail?.message ?? '', /not valid UTF-8/);
      assert.equal((await get(port)).body, 'a');
    } finally {
      await proxy.stop();
      await xds.stop();
      await a.close();
    }
  });
});
