import assert from 'node:assert/strict';
import { test } from 'node:test';
import { activeHealthChanged, type Envelope, type ProxyEvent } from '../../../events/index.js';
import { renderTimelinePage, renderTimelineRow } from '../../../views/events/timeline-html.js';

const hostile = '<img src=x onerror=alert(1)>';
const env: Envelope<ProxyEvent> = {
  seq: 7,
  at: Date.UTC(2026, 10, 23, 9, 0),
  source: "x'><script>",
  event: activeHealthChanged({ cluster: hostile, address: '10.0.0.1:80', healthy: false }),
};

test('names from the configuration are escaped everywhere in a row', () => {
  const row = renderTimelineRow(
    { env, patch: [{ op: 'replace', path: `/clusters/${hostile}`, value: hostile }] },
    ['clusters'],
  );
  assert.doesNotMatch(row, /<img|<script/);
  assert.match(row, /cluster &lt;img src=x onerror=alert\(1\)&gt;: host 10\.0\.0\.1:80 failed/);
  assert.match(
    row,
    /<a href='clusters\?at=7'>clusters<\/a> <a href='snapshots\/diff\?from=6&amp;to=7'>diff<\/a>/,
  );
});

test('filter values come back into the form escaped, and a page offline has no form, links or script', () => {
  const page = (offline?: { log: string; filter: string }) =>
    String(
      renderTimelinePage({
        rows: [{ env, patch: null }],
        matched: 1,
        oldestSeq: 1,
        latestSeq: 7,
        query: new URLSearchParams({ cluster: `'><script>` }),
        views: offline ? [] : ['clusters'],
        types: ['health/active-changed'],
        live: !offline,
        followUrl: 'events?follow=&format=html',
        now: env.at,
        offline,
      }).body,
    );
  const live = page();
  assert.match(live, /<input name='cluster' value='&#39;&gt;&lt;script&gt;'/);
  assert.match(live, /data-live='on' data-latest='7'/);
  assert.match(live, /change no longer retained/);
  const offline = page({ log: '/var/log/<x>.ndjson', filter: 'cluster api' });
  assert.doesNotMatch(offline, /<form|<script>|\?at=/);
  assert.match(offline, /replayed from <code>\/var\/log\/&lt;x&gt;\.ndjson<\/code>/);
});
