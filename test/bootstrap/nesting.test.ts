/**
 * Root cause: nothing bounded how deep a config nests. `--mode validate` said OK to a
 * bootstrap whose `node.metadata` held a list nested 100,000 levels deep (a `Struct` is taken
 * as it is), and serve then died in immer's recursive freeze with `RangeError: Maximum call
 * stack size exceeded`; a management server could send the same inside any resource
 * (endpoint metadata, a TypedStruct) and kill the process. The reference's protobuf parsers
 * stop at 100 levels; now every parsed bootstrap and every discovered resource is checked to
 * 100 levels of objects and lists before it is walked, and refused naming the path.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { MAX_NESTING, nestedTooDeep } from '../../src/bootstrap/nesting.js';
import { errorsOf, load, loadYaml } from '../helpers/bootstrap.js';
import { startProxyProcess } from '../helpers/proxy-process.js';
import { replaceFile } from '../helpers/replace-file.js';
import { assignment, edsBootstrap, get, type Upstream, until, upstream } from '../helpers/xds-fixtures.js';

/** `[[[...]]]` nested `depth` levels, as JSON text (JSON.parse reads any depth). */
const deepList = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

/** `{ a: { a: ... 1 } }` nested `depth` levels, built without recursion. */
function deepObject(depth: number): JsonObject {
  let value: JsonObject = { a: 1 };
  for (let i = 1; i < depth; i++) value = { a: value };
  return value;
}

describe('nestedTooDeep', () => {
  it('allows MAX_NESTING levels and names the first value past them', () => {
    assert.equal(nestedTooDeep(JSON.parse(deepList(MAX_NESTING))), null);
    assert.equal(nestedTooDeep(deepObject(MAX_NESTING)), null);
    // The path is cut after 30 keys, more than the deepest real config nests.
    assert.equal(nestedTooDeep(JSON.parse(deepList(MAX_NESTING + 1))), `${'[0]'.repeat(30)}...`);
    assert.equal(
      nestedTooDeep({ node: { metadata: deepObject(MAX_NESTING) } }, 'x'),
      `x.node.metadata${'.a'.repeat(28)}...`,
    );
    assert.equal(nestedTooDeep({ a: [{ b: 1 }] }), null);
    assert.equal(nestedTooDeep(JSON.parse(deepList(200_000))), `${'[0]'.repeat(30)}...`);
  });
});

describe('a bootstrap nested too deep', () => {
  const dir = mkdtempSync(join(tmpdir(), 'proxy-nesting-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const [ext, text] of [
    ['json', `{"node":{"id":"n","metadata":{"a":${deepList(100_000)}}}}`],
    ['yaml', `node:\n  id: n\n  metadata:\n    a: ${deepList(5_000)}\n`],
    ['yaml', `node:\n  metadata:\n    a: ${'{a: '.repeat(20_000)}1${'}'.repeat(20_000)}\n`],
  ] as const) {
    it(`is refused with a named error, never a crash (${ext}, ${text.length} bytes)`, () => {
      const file = join(dir, `deep.${ext}`);
      writeFileSync(file, text);
      const errors = errorsOf(load({ configPath: file }));
      assert.equal(errors.length, 1, errors.join('\n'));
      assert.ok(errors[0]!.startsWith(`${file}: `), errors[0]!);
      assert.match(errors[0]!, /nested more than 100 levels|Maximum call stack/);
    });
  }

  it('is refused by --config-yaml too', () => {
    const errors = errorsOf(loadYaml(`node: {metadata: {a: ${deepList(150)}}}`));
    assert.match(errors[0]!, /^--config-yaml: node\.metadata\.a\[0\].*: nested more than/);
  });
});

describe('a discovered resource nested too deep', () => {
  let a: Upstream;
  let b: Upstream;
  before(async () => {
    a = await upstream('a');
    b = await upstream('b');
  });
  after(async () => {
    await a.close();
    await b.close();
  });

  const deepAssignment = (port: number, depth: number): JsonObject => {
    const base = assignment('some_service', [port]);
    const endpoints = base.endpoints as Array<{ lb_endpoints: JsonObject[] }>;
    endpoints[0]!.lb_endpoints[0]!.metadata = { filter_metadata: { x: deepObject(depth) } };
    return base;
  };

  it('from a file is rejected; the process lives and the last good endpoints serve', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'proxy-nesting-file-'));
    const file = join(dir, 'eds.json');
    const write = (text: string) => replaceFile(file, text);
    const cla = 'type.googleapis.com/envoy.api.v2.ClusterLoadAssignment';
    write(
      JSON.stringify({
        version_info: '1',
        resources: [{ '@type': cla, ...assignment('some_service', [a.port]) }],
      }),
    );
    const proxy = await startProxyProcess(edsBootstrap(1, { path: file }), ['--concurrency', '1']);
    try {
      const port = await proxy.listenerPort('listener_0');
      assert.equal((await get(port)).body, 'a');
      // JSON text, so the depth is only what JSON.parse reads: 100,000 levels.
      const deep = JSON.stringify({ '@type': cla, ...deepAssignment(b.port, 1) }).replace(
        '"x":{"a":1}',
        `"x":{"a":${deepList(100_000)}}`,
      );
      write(`{"version_info":"2","resources":[${deep}]}`);
      await until('the deep file rejected', async () => {
        const stats = await proxy.get('/stats?filter=update_rejected').then(
          (r) => r.body,
          () => assert.fail(`the proxy died: ${proxy.stderr().slice(-2000)}`),
        );
        return /some_service\.update_rejected: 1/.test(stats);
      });
      assert.equal(proxy.child.exitCode, null, proxy.stderr());
      for (let i = 0; i < 3; i++) assert.equal((await get(port)).body, 'a');
      assert.match((await proxy.get('/events?format=json')).body, /nested more than 100 levels deep/);
    } finally {
      await proxy.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
