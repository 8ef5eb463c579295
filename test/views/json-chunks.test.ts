import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { jsonChunks } from '../../views/json-chunks.js';
import { lazyList, madeWhole } from '../../views/lazy-list.js';
import { omitDefaults } from '../../views/proto-json.js';

// JSON-like values with the holes proto JSON views leave: undefined fields, zeros, empty
// strings, lists and objects (which omitDefaults drops), nested lists of objects.
const leaf = fc.oneof(
  fc.constant(undefined),
  fc.constant(0),
  fc.constant(''),
  fc.constant(false),
  fc.constant(null),
  fc.integer(),
  fc.string(),
  fc.boolean(),
);
const { tree } = fc.letrec((tie) => ({
  tree: fc.oneof({ depthSize: 'small' }, leaf, tie('list'), tie('object')),
  list: fc.array(tie('tree'), { maxLength: 4 }),
  object: fc.dictionary(fc.string({ maxLength: 4 }), tie('tree'), { maxKeys: 4 }),
}));

test('jsonChunks writes exactly what JSON.stringify writes, with and without omitDefaults', () => {
  fc.assert(
    fc.property(tree, fc.boolean(), fc.integer({ min: 1, max: 40 }), (value, omit, limit) => {
      const expected = `${JSON.stringify(omit ? omitDefaults(value) : value, null, 1) ?? 'null'}\n`;
      assert.equal([...jsonChunks(value, omit, limit)].join(''), expected);
    }),
    { seed: 17, numRuns: 2000 },
  );
});

test('jsonChunks hands a long list over in pieces near the limit, never the whole text', () => {
  const value = {
    configs: [{ '@type': 't', items: Array.from({ length: 5000 }, (_, i) => ({ name: `n${i}` })) }],
  };
  const pieces = [...jsonChunks(value, true, 4096)];
  assert.ok(pieces.length > 10, `${pieces.length} pieces`);
  const longest = Math.max(...pieces.map((p) => p.length));
  assert.ok(longest < 4096 + 200, `longest piece ${longest}`);
  assert.equal(pieces.join(''), `${JSON.stringify(value, null, 1)}\n`);
});

// Lists made lazily (a dump's clusters, redacted as they are written) are written exactly as
// the same lists made whole, wherever they sit: under objects that hold no list themselves too.
test('jsonChunks writes a lazily made list as the list made whole', () => {
  const lazily = (v: unknown, pick: boolean[], at = { i: 0 }): unknown => {
    if (Array.isArray(v)) {
      const inner = v.map((e) => lazily(e, pick, at));
      return inner.length > 0 && pick[at.i++ % pick.length] ? lazyList(inner, (e) => e) : inner;
    }
    if (v === null || typeof v !== 'object') return v;
    return Object.fromEntries(Object.entries(v).map(([k, e]) => [k, lazily(e, pick, at)]));
  };
  const nested = fc.oneof(
    tree,
    tree.map((t) => ({ a: { b: { c: t } }, d: 0 })),
  );
  fc.assert(
    fc.property(nested, fc.array(fc.boolean(), { minLength: 1 }), fc.boolean(), (value, pick, omit) => {
      const lazy = lazily(value, pick);
      const expected = `${JSON.stringify(omit ? omitDefaults(value) : value, null, 1) ?? 'null'}\n`;
      assert.equal([...jsonChunks(lazy, omit, 16)].join(''), expected);
      assert.equal(JSON.stringify(madeWhole(lazy)), JSON.stringify(value));
    }),
    { seed: 23, numRuns: 1500 },
  );
});
