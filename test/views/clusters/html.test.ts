import assert from 'node:assert/strict';
import { it } from 'node:test';
import {
  activeHealthChanged,
  bootstrapLoaded,
  type Envelope,
  outlierChanged,
  type ProxyEvent,
} from '../../../events/index.js';
import { foldAll, initialState } from '../../../reducers/index.js';
import { zeroHostCounters } from '../../../views/clusters/figures.js';
import { renderClustersHtml } from '../../../views/clusters/html.js';
import { bootstrapWith, cluster } from '../../helpers/event-log.js';

const envs = (events: ProxyEvent[]): Envelope<ProxyEvent>[] =>
  events.map((event, i) => ({ seq: i + 1, at: 1000 + i, source: 'test', event }));

const state = foldAll(
  initialState,
  envs([
    bootstrapLoaded({
      bootstrap: bootstrapWith([cluster('api', ['10.0.0.1:80', '10.0.0.2:80', '10.0.0.3:80'])]),
      options: {},
      version: 't',
      sources: [],
    }),
    activeHealthChanged({ cluster: 'api', address: '10.0.0.2:80', healthy: false }),
    outlierChanged({ cluster: 'api', address: '10.0.0.3:80', ejected: true, reason: 'consecutive_5xx' }),
  ]),
);

it('colours each host row by its state and shows success rates and the totals the page rates', () => {
  const figures = {
    hostStats: (_c: string, address: string) =>
      address === '10.0.0.1:80'
        ? { ...zeroHostCounters(), rq_total: 50, rq_success: 9, rq_error: 1 }
        : undefined,
  };
  const body = String(renderClustersHtml(state, figures, { now: 12_000, refreshS: 5, at: null }).body);
  const row = (address: string) =>
    new RegExp(`<tr class='host ([a-z]+)' data-address='${address}'>(.*?)</tr>`).exec(body);
  assert.equal(row('10.0.0.1:80')?.[1], 'healthy');
  assert.equal(row('10.0.0.2:80')?.[1], 'failed');
  assert.equal(row('10.0.0.3:80')?.[1], 'ejected');
  assert.match(row('10.0.0.2:80')?.[2] ?? '', /failed health check/);
  assert.match(row('10.0.0.3:80')?.[2] ?? '', /ejected \(outlier\)/);
  // 9 of 10 requests succeeded; the rate cell carries the total for the page's script.
  assert.match(
    row('10.0.0.1:80')?.[2] ?? '',
    /90\.0%<\/td><td class='num rate' data-host='api\/10\.0\.0\.1:80' data-total='50'>—<\/td>/,
  );
  assert.match(row('10.0.0.2:80')?.[2] ?? '', /<td class='num success'>—<\/td>/);
  assert.match(body, /3 hosts: 1 healthy, 1 failed, 1 ejected/);
  assert.match(body, /<meta http-equiv='refresh' content='5'>/);
  assert.match(body, /<body data-now='12000'>/);
});

it('names a past snapshot and can stay still', () => {
  const body = String(
    renderClustersHtml(state, { hostStats: () => undefined }, { now: 0, refreshS: 0, at: 2 }).body,
  );
  assert.match(body, /as of the snapshot after event 2/);
  assert.doesNotMatch(body, /http-equiv='refresh'/);
});
