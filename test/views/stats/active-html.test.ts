import assert from 'node:assert/strict';
import { it } from 'node:test';
import { Script } from 'node:vm';
import { DEFAULT_HISTOGRAM_BUCKETS } from '../../../src/stats/buckets.js';
import { ACTIVE_SAMPLES, renderActiveHtml } from '../../../views/stats/active-html.js';
import type { StatsParams } from '../../../views/stats/params.js';

const params = (filterSource: string): StatsParams => ({
  usedOnly: true,
  filterSource,
  filter: null,
  type: 'All',
  format: 'active-html',
  histogramBuckets: 'none',
  textReadouts: false,
  buckets: DEFAULT_HISTOGRAM_BUCKETS,
});

const scriptOf = (page: string): string => /<script>([\s\S]*)<\/script>/.exec(page)?.[1] ?? '';

it('carries its script inline, and the script parses', () => {
  const page = renderActiveHtml(params(''));
  // Nothing fetched from elsewhere: the admin works offline.
  assert.doesNotMatch(page, /<script src|<link |(src|href|url)[=(]["']?https?:/);
  const script = scriptOf(page);
  assert.ok(script.length > 1000);
  assert.doesNotThrow(() => new Script(script));
});

it('draws 320 px sparklines on a shared time axis, read out under the pointer', () => {
  const script = scriptOf(renderActiveHtml(params('')));
  assert.match(script, /var W = 320, PLOT = 34, AXIS = 12;/);
  assert.match(script, /var SAMPLES = 60;/);
  assert.equal(ACTIVE_SAMPLES, 60);
  // Ticks at the start, the middle and the end of the window.
  assert.match(script, /\[0, 0\.5, 1\]\.forEach/);
  assert.match(script, /svg\.addEventListener\('mousemove'/);
  assert.match(renderActiveHtml(params('')), /point at one for the value and time of the nearest sample/);
});

it('escapes the filter it was asked with', () => {
  const page = renderActiveHtml(params(`"><script>alert(1)</script>`));
  assert.match(page, /value="&quot;&gt;&lt;script&gt;alert\(1\)&lt;\/script&gt;"/);
  assert.equal(page.match(/<script>/g)?.length, 1);
});
