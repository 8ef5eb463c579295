import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { TagProducer } from '../../src/stats/tags.js';

/** The same extraction run by a regex RE2 refuses (a lookahead that always holds forces ECMAScript). */
function backtracking(regex: string): TagProducer {
  return new TagProducer({
    use_all_default_tags: false,
    stats_tags: [{ tag_name: 't', regex: `(?=)${regex}` }],
  });
}

function onRe2(regex: string): TagProducer {
  return new TagProducer({ use_all_default_tags: false, stats_tags: [{ tag_name: 't', regex }] });
}

const REGEXES = [
  '^cluster\\.((.+?)\\.)',
  '\\.((\\w+?)\\.)upstream',
  '_rq(_(\\d{3}))$',
  '^(a)',
  '(\\.a\\.)',
  '((a|b)+)\\.',
  '\\.(([ab]*)\\.)',
];

test('a user tag regex on RE2 extracts exactly what ECMAScript does', () => {
  fc.assert(
    fc.property(
      fc.constantFrom(...REGEXES),
      fc.array(fc.constantFrom('cluster', 'a', 'b', 'ab', '.', '_rq_200', 'upstream', '', '_'), {
        maxLength: 8,
      }),
      (regex, parts) => {
        const name = parts.join('');
        assert.deepEqual(
          onRe2(regex).extract(name),
          backtracking(regex).extract(name),
          `${regex} on ${name}`,
        );
      },
    ),
    { seed: 1311, numRuns: Number(process.env.FUZZ_RUNS ?? 500), includeErrorInReport: true },
  );
});

test('a catastrophic user tag regex does not stall stat creation', () => {
  const producer = onRe2('^(([a-z_.]+)+)!$');
  const started = performance.now();
  const out = producer.extract('cluster.some_long_cluster_name.upstream_cx_connect_timeout');
  assert.deepEqual(out.tags, []);
  assert.ok(performance.now() - started < 500);
});

test('a tag regex with a lookahead still works (ECMAScript, as the reference)', () => {
  const out = onRe2('^cluster(?=\\.)\\.((.*?)\\.)').extract('cluster.web.upstream_rq_total');
  assert.deepEqual(out, { name: 'cluster.upstream_rq_total', tags: [{ name: 't', value: 'web' }] });
});
