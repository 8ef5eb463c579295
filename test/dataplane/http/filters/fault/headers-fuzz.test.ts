/**
 * Clients choose faults through headers (`header_abort`, `header_delay` and their percentage
 * headers): random values over real sockets never crash the proxy or answer anything but the
 * upstream's 200 or the status the abort header names when it is in [200, 600). Fixed seed;
 * `FUZZ_RUNS` sets the number of requests.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import fc from 'fast-check';
import { startProxy, type TestProxy } from '../../../../helpers/http-dataplane.js';
import { countingUpstream, send } from '../../../../helpers/http-send.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 200);

let upstream: Awaited<ReturnType<typeof countingUpstream>>;
let proxy: TestProxy;

before(async () => {
  upstream = await countingUpstream();
  proxy = await startProxy(
    {
      stat_prefix: 'fuzz',
      route_config: {
        virtual_hosts: [
          {
            name: 'all',
            domains: ['*'],
            routes: [{ match: { prefix: '/' }, route: { cluster: 'backend' } }],
          },
        ],
      },
      http_filters: [
        {
          name: 'envoy.fault',
          config: {
            abort: { header_abort: {}, percentage: { numerator: 100 } },
            delay: { header_delay: {}, percentage: { numerator: 100 } },
          },
        },
        { name: 'envoy.router' },
      ],
    },
    [{ raw: { name: 'backend', connect_timeout: '1s' }, addresses: [`127.0.0.1:${upstream.port}`] }],
  );
});

after(async () => {
  await proxy.close();
  upstream.server.close();
});

/** A header value: printable bytes, or a number; digit strings kept small so delays stay short. */
const value = (max: number) =>
  fc.oneof(
    fc.stringMatching(/^[\x21-\x7e]{0,12}$/).filter((s) => !/^\d+$/.test(s)),
    fc.integer({ min: 0, max }).map(String),
  );

it('random fault headers get the upstream or the named status, and the proxy keeps answering', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.record({
        'x-envoy-fault-abort-request': value(700),
        'x-envoy-fault-abort-request-percentage': value(150),
        'x-envoy-fault-delay-request': value(20),
        'x-envoy-fault-delay-request-percentage': value(150),
      }),
      async (headers) => {
        const answer = await send(proxy.port, 'GET', '/', headers);
        const named = Number(headers['x-envoy-fault-abort-request']);
        const abortable = /^\d+$/.test(headers['x-envoy-fault-abort-request']) && named >= 200 && named < 600;
        assert.ok(
          answer.status === 200 || (abortable && answer.status === named),
          `${answer.status} for ${JSON.stringify(headers)}`,
        );
      },
    ),
    { numRuns: RUNS, seed: 29 },
  );
  assert.equal((await send(proxy.port, 'GET', '/')).status, 200);
  assert.equal(proxy.gauge('http.fuzz.fault.active_faults'), 0);
  // The property is not vacuous: some requests were aborted, some delayed.
  assert.ok(proxy.counter('http.fuzz.fault.aborts_injected') > 0);
  assert.ok(proxy.counter('http.fuzz.fault.delays_injected') > 0);
});
