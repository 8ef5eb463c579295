/**
 * The unified matcher tree over a toy domain (inputs read keys of a record, actions are their
 * names): first match wins, nested matchers that decide nothing let the next one try, the
 * longest prefix wins, `on_no_match` at every level; and any config shaped like a matcher
 * compiles without throwing (errors into the report) and, when it compiles, decides without throwing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Json, JsonObject } from '../../events/index.js';
import { Report } from '../../src/bootstrap/report.js';
import { compileMatcher, type MatcherDomain } from '../../src/config/unified-matcher.js';

type Data = Record<string, string>;

const domain: MatcherDomain<Data, string> = {
  what: 'test',
  input: (type, config, path, report) => {
    if (type !== 'test.Key') {
      report.unsupported(path, `${type} is no input`);
      return undefined;
    }
    const key = String(config.key);
    return (d) => d[key] ?? null;
  },
  customMatch: (type, _config, path, report) => {
    if (type !== 'test.Even') {
      report.unsupported(path, `${type} is no matcher`);
      return undefined;
    }
    return (counters) => {
      const odd = counters('odd');
      return (v) => {
        const even = v !== null && Number(v) % 2 === 0;
        if (!even) odd.inc();
        return even;
      };
    };
  },
  action: (type, config, path, report) => {
    if (type !== 'test.Act') {
      report.unsupported(path, `${type} is no action`);
      return undefined;
    }
    return String(config.name);
  },
};

const key = (k: string): JsonObject => ({
  name: 'in',
  typed_config: { '@type': 'type.googleapis.com/test.Key', key: k },
});
const act = (name: string): JsonObject => ({
  action: { name: 'a', typed_config: { '@type': 'test.Act', name } },
});
const is = (k: string, exact: string): JsonObject => ({
  single_predicate: { input: key(k), value_match: { exact } },
});

function compile(raw: JsonObject) {
  const report = new Report('t');
  const counts: Record<string, number> = {};
  const plan = compileMatcher(raw, 'm', report, domain);
  assert.deepEqual(report.errors, []);
  const counter = (name: string) => ({
    inc: () => {
      counts[name] = (counts[name] ?? 0) + 1;
    },
  });
  return { decide: plan(counter), counts };
}

describe('the unified matcher', () => {
  it('a list: the first match wins; a nested matcher deciding nothing lets the next one try; else on_no_match', () => {
    const { decide } = compile({
      matcher_list: {
        matchers: [
          {
            predicate: is('a', '1'),
            on_match: {
              matcher: { matcher_list: { matchers: [{ predicate: is('b', '1'), on_match: act('nested') }] } },
            },
          },
          { predicate: { or_matcher: { predicate: [is('a', '1'), is('a', '2')] } }, on_match: act('second') },
          {
            predicate: { and_matcher: { predicate: [is('c', 'x'), { not_matcher: is('d', 'y') }] } },
            on_match: act('third'),
          },
        ],
      },
      on_no_match: act('none'),
    });
    assert.equal(decide({ a: '1', b: '1' }), 'nested');
    assert.equal(decide({ a: '1' }), 'second');
    assert.equal(decide({ a: '2' }), 'second');
    assert.equal(decide({ c: 'x' }), 'third');
    assert.equal(decide({ c: 'x', d: 'y' }), 'none');
    assert.equal(decide({}), 'none');
  });

  it('without on_no_match it decides nothing; a missing value matches no string, and its negation holds', () => {
    const { decide } = compile({
      matcher_list: { matchers: [{ predicate: { not_matcher: is('a', '1') }, on_match: act('not-one') }] },
    });
    assert.equal(decide({ a: '1' }), null);
    assert.equal(decide({}), 'not-one');
  });

  it('an exact map and a prefix map, the longest prefix first, falling back to a shorter one', () => {
    const exact = compile({
      matcher_tree: { input: key('k'), exact_match_map: { map: { x: act('x'), y: act('y') } } },
    }).decide;
    assert.equal(exact({ k: 'x' }), 'x');
    assert.equal(exact({ k: 'xx' }), null);
    assert.equal(exact({}), null);
    const prefix = compile({
      matcher_tree: {
        input: key('k'),
        prefix_match_map: {
          map: {
            '/': act('root'),
            '/api/': {
              matcher: { matcher_list: { matchers: [{ predicate: is('v', '2'), on_match: act('api-v2') }] } },
            },
          },
        },
      },
      on_no_match: act('none'),
    }).decide;
    assert.equal(prefix({ k: '/api/x', v: '2' }), 'api-v2');
    assert.equal(prefix({ k: '/api/x' }), 'root', 'the longer prefix decided nothing: the shorter one does');
    assert.equal(prefix({ k: 'nope' }), 'none');
  });

  it('a custom matcher with its counters, bound when started', () => {
    const { decide, counts } = compile({
      matcher_list: {
        matchers: [
          {
            predicate: {
              single_predicate: {
                input: key('n'),
                custom_match: { name: 'e', typed_config: { '@type': 'test.Even' } },
              },
            },
            on_match: act('even'),
          },
        ],
      },
    });
    assert.equal(decide({ n: '4' }), 'even');
    assert.equal(decide({ n: '3' }), null);
    assert.deepEqual(counts, { odd: 1 });
  });

  it('any config shaped like a matcher compiles without throwing, and decides without throwing when it compiles', () => {
    const leaf = fc.oneof(
      fc.constant<Json>(null),
      fc.boolean(),
      fc.integer(),
      fc.constantFrom('a', '1', '/', 'test.Key', 'test.Act', 'test.Even'),
    );
    const typedAny = fc.record(
      {
        name: fc.string(),
        typed_config: fc.record(
          {
            '@type': fc.constantFrom('test.Key', 'test.Act', 'test.Even', 'x.Other'),
            key: fc.constantFrom('a', 'b'),
            name: fc.string(),
          },
          { requiredKeys: [] },
        ),
      },
      { requiredKeys: [] },
    );
    const { matcher } = fc.letrec<{ matcher: Json; predicate: Json; onMatch: Json }>((tie) => ({
      predicate: fc.oneof(
        { depthSize: 'small' },
        fc.record({
          single_predicate: fc.record(
            {
              input: typedAny,
              value_match: fc.record(
                {
                  exact: fc.string(),
                  prefix: fc.string(),
                  safe_regex: fc.record({ regex: fc.constantFrom('a+', '(', '') }),
                },
                { requiredKeys: [] },
              ),
              custom_match: typedAny,
            },
            { requiredKeys: [] },
          ),
        }),
        fc.record({ or_matcher: fc.record({ predicate: fc.array(tie('predicate'), { maxLength: 3 }) }) }),
        fc.record({ and_matcher: fc.record({ predicate: fc.array(tie('predicate'), { maxLength: 3 }) }) }),
        fc.record({ not_matcher: tie('predicate') }),
        leaf,
      ),
      onMatch: fc.oneof(
        { depthSize: 'small' },
        fc.record({ action: typedAny }),
        fc.record({ matcher: tie('matcher') }),
        fc.record({ keep_matching: fc.boolean() }),
        leaf,
      ),
      matcher: fc.oneof(
        { depthSize: 'small' },
        fc.record(
          {
            matcher_list: fc.record({
              matchers: fc.array(
                fc.record({ predicate: tie('predicate'), on_match: tie('onMatch') }, { requiredKeys: [] }),
                { maxLength: 3 },
              ),
            }),
            on_no_match: tie('onMatch'),
          },
          { requiredKeys: [] },
        ),
        fc.record(
          {
            matcher_tree: fc.record(
              {
                input: typedAny,
                exact_match_map: fc.record({
                  map: fc.dictionary(fc.constantFrom('a', 'b', '1'), tie('onMatch')),
                }),
                prefix_match_map: fc.record({
                  map: fc.dictionary(fc.constantFrom('', '/', 'a'), tie('onMatch')),
                }),
              },
              { requiredKeys: [] },
            ),
            on_no_match: tie('onMatch'),
          },
          { requiredKeys: [] },
        ),
        leaf,
      ),
    }));
    const data = fc.dictionary(fc.constantFrom('a', 'b', 'k'), fc.constantFrom('a', '1', '2', '/', ''));
    fc.assert(
      fc.property(matcher, fc.array(data, { maxLength: 4 }), (raw, samples) => {
        const report = new Report('t');
        const plan = compileMatcher((raw ?? {}) as JsonObject, 'm', report, domain);
        if (report.failed) return;
        const decide = plan(() => ({ inc() {} }));
        for (const d of samples) {
          const out = decide(d);
          assert.ok(out === null || typeof out === 'string');
        }
      }),
      { seed: 2929, numRuns: Number(process.env.FUZZ_RUNS ?? 300) },
    );
  });
});
