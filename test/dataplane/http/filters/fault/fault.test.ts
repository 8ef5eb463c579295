/**
 * The fault filter over real sockets, in the real `proxy` process on two workers: the
 * reference's fault-injection example filter (pasted unchanged below: both faults at 0%, turned
 * on through the runtime keys its scripts write), then header-controlled faults,
 * `max_active_faults`, `headers`, `upstream_cluster` and a per-route override. Each request
 * goes on a fresh connection, so both workers answer some.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import type { Json, JsonObject } from '../../../../../events/index.js';
import { fileAccessLog, httpListenerV3 } from '../../../../helpers/bootstraps.js';
import { countingUpstream, send } from '../../../../helpers/http-send.js';
import { type ProxyProcess, startProxyProcess } from '../../../../helpers/proxy-process.js';

/** `examples/fault-injection/envoy.yaml` of the reference: its fault filter entry, unchanged. */
const EXAMPLE_FAULT_FILTER = `
- name: envoy.filters.http.fault
  typed_config:
    "@type": type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault
    abort:
      http_status: 503
      percentage:
        numerator: 0
        denominator: HUNDRED
    delay:
      fixed_delay: 3s
      percentage:
        numerator: 0
        denominator: HUNDRED
`;

const HEADER_FAULTS = {
  name: 'proxy.fault',
  typed_config: {
    '@type': 'type.googleapis.com/envoy.config.filter.http.fault.v2.HTTPFault',
    abort: { header_abort: {}, percentage: { numerator: 100 } },
    delay: { header_delay: {}, percentage: { numerator: 100 } },
    headers: [{ name: 'x-chaos', present_match: true }],
    upstream_cluster: 'backend',
    max_active_faults: 1,
    // Its own keys: the example's tests set the default ones, which would apply here too.
    abort_percent_runtime: 'headers.abort_percent',
    delay_percent_runtime: 'headers.delay_percent',
    delay_duration_runtime: 'headers.delay_ms',
    abort_http_status_runtime: 'headers.status',
  },
};

let upstream: Awaited<ReturnType<typeof countingUpstream>>;
let proxy: ProxyProcess;
let dir: string;
let example: number;
let headers: number;

function listener(name: string, filters: Json[], log: string, routes: Json[]): JsonObject {
  return httpListenerV3(name, {
    access_log: [fileAccessLog(log, '%RESPONSE_CODE% %RESPONSE_FLAGS% %REQ(:PATH)%\n')],
    route_config: {
      name: 'local_route',
      virtual_hosts: [{ name: 'service', domains: ['*'], routes }],
    },
    http_filters: [...filters, { name: 'envoy.filters.http.router' }],
  });
}

const logLines = (name: string) => readFileSync(join(dir, `${name}.log`), 'utf8');

async function stat(name: string): Promise<number> {
  const body = (await proxy.get(`/stats?filter=^${name.replaceAll('.', '\\.')}$`)).body;
  return Number(/: (\d+)/.exec(body)?.[1] ?? 0);
}

/** Polls until `check` holds (workers report stats and flush logs asynchronously). */
async function until(check: () => Promise<boolean> | boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

before(async () => {
  upstream = await countingUpstream();
  dir = mkdtempSync(join(tmpdir(), 'fault-'));
  const routeTo = (cluster: string, prefix = '/') => ({ match: { prefix }, route: { cluster } });
  const cluster = (name: string) => ({
    name,
    connect_timeout: '1s',
    type: 'STATIC',
    load_assignment: {
      cluster_name: name,
      endpoints: [
        {
          lb_endpoints: [
            {
              endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: upstream.port } } },
            },
          ],
        },
      ],
    },
  });
  const bootstrap: JsonObject = {
    static_resources: {
      listeners: [
        listener('example', parse(EXAMPLE_FAULT_FILTER), join(dir, 'example.log'), [routeTo('backend')]),
        listener('headers', [HEADER_FAULTS], join(dir, 'headers.log'), [
          routeTo('other', '/other'),
          {
            match: { prefix: '/teapot' },
            route: { cluster: 'backend' },
            typed_per_filter_config: {
              'envoy.filters.http.fault': {
                '@type': 'type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault',
                abort: { http_status: 418, percentage: { numerator: 100 } },
                abort_percent_runtime: 'teapot.abort_percent',
                abort_http_status_runtime: 'teapot.status',
              },
            },
          },
          routeTo('backend'),
        ]),
      ],
      clusters: [cluster('backend'), cluster('other')],
    },
    layered_runtime: { layers: [{ name: 'admin', admin_layer: {} }] },
  };
  proxy = await startProxyProcess(
    bootstrap,
    ['--concurrency', '2', '--file-flush-interval-msec', '100'],
    60_000,
  );
  example = await proxy.listenerPort('example');
  headers = await proxy.listenerPort('headers');
});

after(async () => {
  await proxy?.stop();
  upstream?.server.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the reference example filter (0%, driven by runtime keys)', () => {
  it('passes requests while both shares are 0%', async () => {
    for (let i = 0; i < 4; i++) assert.equal((await send(example, 'GET', '/')).status, 200);
    assert.equal(await stat('http.example.fault.aborts_injected'), 0);
  });

  it('aborts every request once fault.http.abort.abort_percent is 100, with the runtime status', async () => {
    const set = '/runtime_modify?fault.http.abort.abort_percent=100&fault.http.abort.http_status=429';
    assert.equal((await proxy.post(set)).status, 200);
    // Both workers fold the runtime event; each request then is aborted whichever answers it.
    await until(async () => (await send(example, 'GET', '/probe')).status === 429, 'the abort to apply');
    for (let i = 0; i < 4; i++) {
      const answer = await send(example, 'GET', `/abort${i}`);
      assert.equal(answer.status, 429);
      assert.equal(answer.body, 'fault filter abort');
    }
    assert.ok(!upstream.seen.some((s) => s.includes('/abort')), 'an aborted request never goes upstream');
    await until(async () => (await stat('http.example.fault.aborts_injected')) >= 5, 'aborts_injected');
    await until(() => /^429 FI \/abort0$/m.test(logLines('example')), 'the FI flag in the access log');
    assert.equal((await proxy.post('/runtime_modify?fault.http.abort.abort_percent=0')).status, 200);
  });

  it('delays by fixed_duration_ms once fault.http.delay.fixed_delay_percent is 100', async () => {
    const set =
      '/runtime_modify?fault.http.delay.fixed_delay_percent=100&fault.http.delay.fixed_duration_ms=300';
    assert.equal((await proxy.post(set)).status, 200);
    await until(async () => {
      const started = performance.now();
      const ok = (await send(example, 'GET', '/delayed')).status === 200;
      return ok && performance.now() - started >= 300;
    }, 'the delay to apply');
    await until(() => /^200 DI \/delayed$/m.test(logLines('example')), 'the DI flag in the access log');
    assert.ok((await stat('http.example.fault.delays_injected')) >= 1);
    assert.equal((await proxy.post('/runtime_modify?fault.http.delay.fixed_delay_percent=0')).status, 200);
  });
});

describe('header-controlled faults, matching and limits', () => {
  it('aborts with the status x-envoy-fault-abort-request names, only for matching requests', async () => {
    const chaos = { 'x-chaos': '1', 'x-envoy-fault-abort-request': '504' };
    assert.equal((await send(headers, 'GET', '/', chaos)).status, 504);
    // No x-chaos: the headers matcher fails; /other routes to another cluster than upstream_cluster.
    assert.equal((await send(headers, 'GET', '/', { 'x-envoy-fault-abort-request': '504' })).status, 200);
    assert.equal((await send(headers, 'GET', '/other', chaos)).status, 200);
    // Out of [200, 600), and a 0% share from the percentage header: no fault.
    assert.equal(
      (await send(headers, 'GET', '/', { ...chaos, 'x-envoy-fault-abort-request': '99' })).status,
      200,
    );
    const none = { ...chaos, 'x-envoy-fault-abort-request-percentage': '0' };
    assert.equal((await send(headers, 'GET', '/', none)).status, 200);
  });

  it('delays by x-envoy-fault-delay-request, and refuses a second fault beyond max_active_faults', async () => {
    const slow = send(headers, 'GET', '/slow', { 'x-chaos': '1', 'x-envoy-fault-delay-request': '1500' });
    await until(async () => (await stat('http.headers.fault.active_faults')) === 1, 'one active fault');
    // While the delayed request is held on its worker, that worker refuses more faults; the
    // other worker has its own count, so send until one lands on the held one.
    await until(async () => {
      const answer = await send(headers, 'GET', '/', {
        'x-chaos': '1',
        'x-envoy-fault-abort-request': '503',
      });
      return answer.status === 200;
    }, 'a request past max_active_faults');
    assert.ok((await stat('http.headers.fault.faults_overflow')) >= 1);
    assert.equal((await slow).status, 200);
    await until(async () => (await stat('http.headers.fault.active_faults')) === 0, 'the fault to end');
  });

  it("a route's typed_per_filter_config replaces the filter's config", async () => {
    const answer = await send(headers, 'GET', '/teapot');
    assert.equal(answer.status, 418);
    assert.equal(answer.body, 'fault filter abort');
  });
});
