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
import { RequestRates } from '../../../src/admin/request-rates.js';
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

it('colours each host row by its state and reads success and request rates', () => {
  const totals = new Map([['10.0.0.1:80', 0]]);
  const figures = {
    hostStats: (_c: string, address: string) =>
      address === '10.0.0.1:80'
        ? { ...zeroHostCounters(), rq_total: totals.get(address) ?? 0, rq_success: 9, rq_error: 1 }
        : undefined,
  };
  const rates = new RequestRates();
  rates.read(state, figures, 10_000);
  totals.set('10.0.0.1:80', 50);
  const body = String(
    renderClustersHtml(state, figures, {
      requestRate: rates.read(state, figures, 12_000),
      refreshS: 5,
      at: null,
    }).body,
  );
  const row = (address: string) =>
    new RegExp(`<tr class='host ([a-z]+)' data-address='${address}'>(.*?)</tr>`).exec(body);
  assert.equal(row('10.0.0.1:80')?.[1], 'healthy');
  assert.equal(row('10.0.0.2:80')?.[1], 'failed');
  assert.equal(row('10.0.0.3:80')?.[1], 'ejected');
  assert.match(row('10.0.0.2:80')?.[2] ?? '', /failed health check/);
  assert.match(row('10.0.0.3:80')?.[2] ?? '', /ejected \(outlier\)/);
  // 9 of 10 requests succeeded; 50 requests in 2 s.
  assert.match(row('10.0.0.1:80')?.[2] ?? '', /90\.0%<\/td><td class='num rate'>25\.0\/s<\/td>/);
  assert.match(row('10.0.0.2:80')?.[2] ?? '', /<td class='num rate'>—<\/td>/);
  assert.match(body, /3 hosts: 1 healthy, 1 failed, 1 ejected/);
  assert.match(body, /<meta http-equiv='refresh' content='5'>/);
});

it('rates nothing across a counter reset or from a reading less than a second old', () => {
  const figures = { hostStats: () => ({ ...zeroHostCounters(), rq_total: total }) };
  let total = 100;
  const rates = new RequestRates();
  rates.read(state, figures, 0);
  total = 110;
  assert.equal(rates.read(state, figures, 500)('api', '10.0.0.1:80'), null);
  total = 5;
  assert.equal(rates.read(state, figures, 2000)('api', '10.0.0.1:80'), null);
  total = 15;
  assert.equal(rates.read(state, figures, 3000)('api', '10.0.0.1:80'), 10);
});
