/**
 * Root cause: config text was decoded with `toString('utf8')`, which puts U+FFFD in place of
 * every byte that is not UTF-8. A bootstrap or an xDS response with a Latin-1 byte in a name,
 * a header value or a domain loaded and served with a different value than written, and
 * `--mode validate` said OK. The reference's parsers refuse such text; now the file (JSON,
 * YAML, text proto) is refused naming the line, and a REST response is NACKed.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import fc from 'fast-check';
import { readConfigFile } from '../../src/bootstrap/sources.js';
import { errorsOf, loadYaml } from '../helpers/bootstrap.js';
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

/**
 * Root cause: a JSON syntax error was told as V8 tells it. For an unexpected token V8 gives no
 * position and quotes the text before it instead, so the error said `unknown position` and
 * could carry a piece of a secret's value into `--mode validate`, a NACK and the event log (an
 * SDS file or REST response); a file starting with a byte order mark said `unknown position`
 * too. And a file past the longest string the runtime makes was read whole (1 GB of memory and
 * more) and then failed as a `text proto3 parse error`, whatever its format.
 */
describe('readConfigFile with malformed JSON', () => {
  it('names the line and column of an unexpected token and quotes none of the text', () => {
    const file = join(dir, 'secret.json');
    const secret = 'hunter2-SECRET-VALUE';
    writeFileSync(file, `{"resources": [\n  {"password": {"inline_string": "${secret}"}, "x": y}\n]}`);
    const read = readConfigFile(file);
    assert.equal(read.ok, false);
    if (read.ok) return;
    assert.equal(read.error, `${file}: line 2, column 64: JSON syntax error: Unexpected token 'y'`);
    assert.ok(!read.error.includes('SECRET'), read.error);
  });

  it('says where for every malformed JSON, fast-checked', () => {
    fc.assert(
      fc.property(
        fc.json(),
        fc.nat(),
        fc.constantFrom('x', ',', '}', ']', ':', "'", ''),
        (json, at, junk) => {
          const cut = at % (json.length + 1);
          const text = json.slice(0, cut) + junk + json.slice(cut);
          const file = join(dir, 'fuzz.json');
          writeFileSync(file, text);
          const read = readConfigFile(file);
          if (read.ok) return;
          assert.match(read.error, /^\S+: line \d+, column \d+: JSON syntax error: /, JSON.stringify(text));
        },
      ),
      { seed: 7, numRuns: Number(process.env.FUZZ_RUNS ?? 200) },
    );
  });

  it('refuses a byte order mark naming it', () => {
    const file = join(dir, 'bom.json');
    writeFileSync(file, '\uFEFF{"node": {"id": "a"}}');
    const read = readConfigFile(file);
    assert.equal(read.ok, false);
    if (!read.ok)
      assert.match(read.error, /bom\.json: line 1, column 1: JSON syntax error: a byte order mark/);
  });

  it('refuses a file past the longest string the runtime makes before reading it', () => {
    const file = join(dir, 'huge.json');
    // Sparse: no disk, and the old reading would take 600 MB of memory.
    writeFileSync(file, '');
    truncateSync(file, 600 * 1024 * 1024);
    const read = readConfigFile(file);
    assert.equal(read.ok, false);
    if (!read.ok)
      assert.match(read.error, /huge\.json: 629145600 bytes, past the \d+ a config text may have/);
  });
});

/**
 * Root cause: JSON was read with `JSON.parse` alone, which keeps the last of two values of one
 * key and drops the first without a word: `{"node": {"id": "a", "id": "b"}}` loaded as node
 * `b` and `--mode validate` said OK, while the same bootstrap in YAML was refused (`Map keys
 * must be unique`) and the reference's JSON parser refuses it (`'id' has already been set`).
 * Now a key named twice in one object is refused naming the line and the key.
 */
describe('readConfigFile with a key twice in one JSON object', () => {
  it('refuses it naming the line, column and key', () => {
    const file = join(dir, 'twice.json');
    writeFileSync(file, '{"node": {"id": "a",\n  "cluster": "c", "id": "b"}}');
    const read = readConfigFile(file);
    assert.equal(read.ok, false);
    if (!read.ok)
      assert.equal(
        read.error,
        `${file}: line 2, column 19: JSON error: key "id" appears twice in one object`,
      );
  });

  it('reads every object without one as JSON.parse does, and finds any key made twice, fast-checked', () => {
    const file = join(dir, 'keys.json');
    fc.assert(
      fc.property(fc.jsonValue(), fc.string(), (value, key) => {
        const once = JSON.stringify({ [key]: value, z: [value, { [key]: 1 }] });
        writeFileSync(file, once);
        const read = readConfigFile(file);
        assert.ok(read.ok, read.ok ? '' : read.error);
        assert.deepEqual(read.json, JSON.parse(once));
        writeFileSync(
          file,
          `{${JSON.stringify(key)}: 1, "y": ${JSON.stringify(value)}, ${JSON.stringify(key)}: 2}`,
        );
        const twice = readConfigFile(file);
        assert.equal(twice.ok, false);
        if (!twice.ok) assert.match(twice.error, /JSON error: key .* appears twice in one object$/);
      }),
      { seed: 11, numRuns: Number(process.env.FUZZ_RUNS ?? 200) },
    );
  });
});

describe('YAML 1.1 tags in a bootstrap', () => {
  // Root cause: the YAML reader resolved `!!set`, `!!omap`, `!!binary` and `!!timestamp` into a
  // Set, a Map, bytes and a Date, which the loader's field checks do not look into: a
  // `static_resources` written as `!!omap` loaded as nothing, and `--mode validate` said OK.
  const dir = mkdtempSync(join(tmpdir(), 'proxy-yaml-tags-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('reads each tagged node as the map, list or string it is written as', () => {
    const file = join(dir, 'tags.yaml');
    writeFileSync(
      file,
      [
        'set: !!set {a, b}',
        'omap: !!omap [{a: 1}]',
        'binary: !!binary AAAA',
        'time: !!timestamp 2001-12-14t21:59:43.10-05:00',
      ].join('\n'),
    );
    const read = readConfigFile(file);
    assert.ok(read.ok);
    assert.deepEqual(read.json, {
      set: { a: null, b: null },
      omap: [{ a: 1 }],
      binary: 'AAAA',
      time: '2001-12-14t21:59:43.10-05:00',
    });
  });

  it('refuses what such a node holds by name instead of dropping it, in --mode validate', async () => {
    const errors = (yaml: string) => errorsOf(loadYaml(yaml));
    assert.deepEqual(errors('static_resources: !!omap [{clusters: []}]'), [
      '--config-yaml: static_resources: expected an object (envoy.config.bootstrap.v2.Bootstrap.StaticResources), got a list',
    ]);
    assert.match(
      errors('static_resources: !!set {bogus}').join(),
      /static_resources.bogus: unknown field 'bogus'/,
    );
  });
});
