/**
 * Property test of the loader (issue 11, fuzz suite): mutated bootstraps, in JSON, YAML,
 * `--config-yaml` and as damaged text, never make `loadBootstrap` throw; the result is a
 * config, or errors that each start with the source's name. Fixed seed; `FUZZ_RUNS` raises
 * the run count (`npm run fuzz`).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import fc from 'fast-check';
import { parse, stringify } from 'yaml';
import type { LoadResult } from '../../src/bootstrap/load.js';
import { type Dump, fixture, load, root } from '../helpers/bootstrap.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 400);
const dir = mkdtempSync(join(tmpdir(), 'loader-fuzz-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const SEEDS: Dump[] = [
  parse(readFileSync(fixture('full.yaml'), 'utf8')),
  parse(readFileSync(join(root, 'fixtures', 'real-world', 'front-proxy-front-envoy.yaml'), 'utf8')),
  parse(readFileSync(join(root, 'fixtures', 'real-world', 'v2-overview-dynamic.yaml'), 'utf8')),
];

const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'toString', 'valueOf', 'hasOwnProperty', 'prototype'];

/** Odd values a careless or hostile author writes, beside arbitrary JSON. */
const oddValue = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(
    0,
    -1,
    2 ** 53,
    1e308,
    -0.5,
    '',
    '-1s',
    '1e9s',
    '99999999999999999999999',
    'NaN',
    'Infinity',
    'x'.repeat(10_000),
    'type.googleapis.com/',
    'type.googleapis.com/google.protobuf.Struct',
    'type.googleapis.com/constructor',
    '\u0000',
    '*',
    {},
    [],
    [[]],
    { '@type': 'type.googleapis.com/envoy.api.v2.Cluster' },
    { '@type': 42 },
    { value: null },
  ),
  fc
    .constantFrom(...PROTOTYPE_KEYS)
    .map((k) =>
      Object.defineProperty({}, k, { value: 1, enumerable: true, writable: true, configurable: true }),
    ),
);

const anyKey = fc.oneof(
  fc.constantFrom(...PROTOTYPE_KEYS, '@type', 'name', 'typed_config', 'config', 'value'),
  fc.string({ maxLength: 8 }),
);

type Mutation =
  | { op: 'set'; at: number; value: unknown }
  | { op: 'delete'; at: number }
  | { op: 'rename'; at: number; key: string }
  | { op: 'wrap'; at: number }
  | { op: 'unwrap'; at: number }
  | { op: 'duplicate'; at: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ op: fc.constant('set' as const), at: fc.nat(), value: oddValue }),
  fc.record({ op: fc.constant('delete' as const), at: fc.nat() }),
  fc.record({ op: fc.constant('rename' as const), at: fc.nat(), key: anyKey }),
  fc.record({ op: fc.constant('wrap' as const), at: fc.nat() }),
  fc.record({ op: fc.constant('unwrap' as const), at: fc.nat() }),
  fc.record({ op: fc.constant('duplicate' as const), at: fc.nat() }),
);

/** Every (container, key) slot of a JSON tree, in a stable order. */
function slots(value: unknown, out: Array<[Dump, string | number]> = []): Array<[Dump, string | number]> {
  if (Array.isArray(value)) {
    value.forEach((v, i) => {
      out.push([value as unknown as Dump, i]);
      slots(v, out);
    });
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      out.push([value as Dump, k]);
      slots(v, out);
    }
  }
  return out;
}

function define(target: Dump, key: string | number, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function mutate(seed: Dump, mutations: Mutation[]): Dump {
  const doc = structuredClone(seed);
  for (const m of mutations) {
    const all = slots(doc);
    if (all.length === 0) return doc;
    const [container, key] = all[m.at % all.length]!;
    const current = container[key];
    switch (m.op) {
      case 'set':
        define(container, key, m.value);
        break;
      case 'delete':
        if (Array.isArray(container)) container.splice(key as number, 1);
        else delete container[key];
        break;
      case 'rename':
        if (!Array.isArray(container)) {
          delete container[key];
          define(container, m.key, current);
        }
        break;
      case 'wrap':
        define(container, key, [current]);
        break;
      case 'unwrap':
        if (Array.isArray(current)) define(container, key, current[0] ?? null);
        break;
      case 'duplicate':
        if (Array.isArray(container)) container.splice(key as number, 0, structuredClone(current));
        break;
    }
  }
  return doc;
}

/** Damage to the text itself: a cut, a stray byte, a swapped pair. */
const textDamage: fc.Arbitrary<TextDamage> = fc.oneof(
  fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
  fc.record({
    kind: fc.constant('insert' as const),
    at: fc.nat(),
    text: fc.constantFrom(
      '{',
      '}',
      '[',
      ':',
      '"',
      '\n',
      '\t',
      '&a',
      '*a',
      '<<: *a',
      '!!binary',
      '\u0000',
      '\ufeff',
      '- ',
      '#',
    ),
  }),
  fc.record({ kind: fc.constant('drop' as const), at: fc.nat(), length: fc.integer({ min: 1, max: 20 }) }),
);

interface TextDamage {
  kind: 'cut' | 'insert' | 'drop';
  at: number;
  text?: string;
  length?: number;
}

function damage(text: string, d: TextDamage): string {
  const at = text.length === 0 ? 0 : d.at % text.length;
  if (d.kind === 'cut') return text.slice(0, at);
  if (d.kind === 'insert') return text.slice(0, at) + d.text + text.slice(at);
  return text.slice(0, at) + text.slice(at + (d.length ?? 1));
}

/** The property: no throw; a config, or errors each naming the source. */
function checkResult(result: LoadResult, label: string): void {
  if (result.ok) {
    assert.equal(typeof result.bootstrap, 'object');
    assert.ok(Array.isArray(result.warnings));
    return;
  }
  assert.ok(result.errors.length > 0, 'a failed load says why');
  for (const error of result.errors) {
    assert.equal(typeof error, 'string');
    assert.ok(error.startsWith(`${label}: `), `error without its source: ${error}`);
  }
}

let counter = 0;

test('mutated bootstraps load or fail with errors naming the source and the field', () => {
  fc.assert(
    fc.property(
      fc.nat({ max: SEEDS.length - 1 }),
      fc.array(mutation, { minLength: 1, maxLength: 4 }),
      fc.constantFrom('json', 'yaml', 'config-yaml'),
      fc.option(textDamage, { freq: 4 }),
      fc.boolean(),
      (seed, mutations, format, hurt, allowUnknown) => {
        const doc = mutate(SEEDS[seed]!, mutations);
        let text = format === 'json' ? JSON.stringify(doc, null, 1) : stringify(doc);
        if (hurt) text = damage(text, hurt);
        if (format === 'config-yaml') {
          // An empty --config-yaml is no bootstrap at all, which is its own error.
          if (text === '') return;
          checkResult(load({ configYaml: text, allowUnknownStaticFields: allowUnknown }), '--config-yaml');
          return;
        }
        const file = join(dir, `b${counter++ % 8}.${format}`);
        writeFileSync(file, text);
        checkResult(load({ configPath: file, allowUnknownStaticFields: allowUnknown }), file);
      },
    ),
    { seed: 1011, numRuns: RUNS, includeErrorInReport: true },
  );
});

test('a field error names its path, so the author can find it', () => {
  fc.assert(
    fc.property(fc.constantFrom(...PROTOTYPE_KEYS, 'no_such_field'), fc.nat(), (key, at) => {
      const doc = structuredClone(SEEDS[0]!);
      const objects = slots(doc).filter(([c, k]) => {
        const v = c[k];
        return (
          v &&
          typeof v === 'object' &&
          !Array.isArray(v) &&
          !/metadata|typed_per_filter_config|^value$/.test(String(k))
        );
      });
      const [container, k] = objects[at % objects.length]!;
      define(container[k], key, 1);
      const result = load({ configYaml: stringify(doc) });
      assert.ok(!result.ok);
      assert.ok(
        result.errors.some(
          (e) => e.includes(`.${key}: unknown field '${key}'`) || e.includes(`: ${key}: unknown field`),
        ),
        result.errors.join('\n'),
      );
    }),
    { seed: 1012, numRuns: Math.min(RUNS, 100), includeErrorInReport: true },
  );
});

test('YAML that fails only while being built is an error with its source, not a throw', () => {
  const merge = load({ configYaml: 'x: &a [1]\nadmin:\n  <<: *a\n' });
  assert.ok(!merge.ok);
  assert.match(merge.errors[0]!, /^--config-yaml: YAML error: Merge sources must be maps/);
  const laughs = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
  for (let i = 1; i < 8; i++)
    laughs.push(
      `${'b'.repeat(i)}: &${'b'.repeat(i)} [${Array(10)
        .fill(i === 1 ? '*a' : `*${'b'.repeat(i - 1)}`)
        .join(', ')}]`,
    );
  const bomb = load({ configYaml: laughs.join('\n') });
  assert.ok(!bomb.ok);
  assert.match(bomb.errors[0]!, /^--config-yaml: YAML error: .*alias/i);
});

test('damaged .pb and .pb_text files load or fail with an error naming the file', () => {
  const binary = readFileSync(fixture('full.pb'));
  const text = readFileSync(fixture('full.pb_text'), 'utf8');
  fc.assert(
    fc.property(
      fc.boolean(),
      fc.array(fc.record({ at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }), {
        minLength: 1,
        maxLength: 4,
      }),
      fc.option(fc.nat(), { freq: 3 }),
      (asText, flips, cut) => {
        let bytes: Buffer = Buffer.from(asText ? Buffer.from(text) : binary);
        for (const { at, byte } of flips) bytes[at % bytes.length] = byte;
        if (cut !== null) bytes = bytes.subarray(0, cut % bytes.length);
        const file = join(dir, `damaged${counter++ % 8}.${asText ? 'pb_text' : 'pb'}`);
        writeFileSync(file, bytes);
        checkResult(load({ configPath: file }), file);
      },
    ),
    { seed: 1013, numRuns: RUNS, includeErrorInReport: true },
  );
});
